// log_softmax_top_k: each row's best `count` log-probabilities of a matrix
// of logits [rows, n], exactly RowTopKOf(LogSoftmax(x), count,
// forbidden_column, allowed) (ops/row_top_k, ops/softmax): the same values to the
// bit, the same columns, ties and NaN and -infinity rows alike; but on the
// CPU in one kernel that never writes the [rows, n] log-probabilities: a
// beam step of 128 rows over 8000 tokens reads its logits three times in
// the cache (max, sum of exponentials, ranking) where the two ops write and
// re-read 4 MB; on CUDA row_top_k's kernel ranks log-probabilities it
// computes on the fly (up to kMaxRowTopK a row). A search that needs only
// each row's best tokens (beam search's 2 * beam + 1) decodes through it
// (layers/transformer_decoding.cc).
#ifndef TFM_OPS_LOG_SOFTMAX_TOP_K_LOG_SOFTMAX_TOP_K_H_
#define TFM_OPS_LOG_SOFTMAX_TOP_K_LOG_SOFTMAX_TOP_K_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/row_top_k/row_top_k.h"

namespace tfm {

// `logits` f32 [rows, n]; 1 <= count (<= kMaxRowTopK off the CPU);
// forbidden_column < 0: none; `allowed` (row_top_k.h's RowTopKOf) undefined:
// every column. The log-probabilities are normalised over every column, as
// log_softmax's: the allowed bits choose which are ranked, not what they
// are (a constraint masks a step's distribution after its log-softmax).
absl::StatusOr<RowTopK> LogSoftmaxTopK(const Tensor& logits, int64_t count,
                                       int64_t forbidden_column = -1,
                                       const Tensor& allowed = Tensor());

}  // namespace tfm

#endif  // TFM_OPS_LOG_SOFTMAX_TOP_K_LOG_SOFTMAX_TOP_K_H_
