// concat_rows: tensors of one dtype, device and trailing shape stacked along
// their first axis into one new tensor (torch.cat(xs, dim=0)). Attention's
// packed projections need it: the q, k and v weights [h d, d_model] of a
// layer become one [3 h d, d_model] weight, so that one GEMM makes all three
// projections. Only bytes move: every dtype, on the CPU and on CUDA (copies
// queued on the op's stream, no wait for the device).
#ifndef TFM_OPS_CONCAT_ROWS_CONCAT_ROWS_H_
#define TFM_OPS_CONCAT_ROWS_CONCAT_ROWS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// [sum of xs[i].dim(0), rest...] from xs, each [n_i, rest...] (rank >= 1).
absl::StatusOr<Tensor> ConcatRows(absl::Span<const Tensor> xs);

}  // namespace tfm

#endif  // TFM_OPS_CONCAT_ROWS_CONCAT_ROWS_H_
