// cast: a tensor's values in another floating dtype (f32, f16, bf16),
// rounded to nearest even when narrowing, exact when widening. Mixed
// precision training needs it both ways: f32 master weights rounded to bf16
// once per pass, and the bf16 weight gradients widened into f32 before they
// are summed (layers/parameter_init.h). Kernels for every pair of the three
// floating dtypes on the CPU and on CUDA, with the same bits on both.
#ifndef TFM_OPS_CAST_CAST_H_
#define TFM_OPS_CAST_CAST_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// A new tensor of x's shape on x's device holding x's values as `dtype` (a
// copy when x already has it).
absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype);

// Cast of each of `xs` (one dtype, one device) in one op call: on CUDA one
// launch over the list instead of one per tensor (a model's weights rounded
// for a pass, its 16-bit gradients widened after one).
absl::StatusOr<std::vector<Tensor>> CastAll(absl::Span<const Tensor> xs, DType dtype);

}  // namespace tfm

#endif  // TFM_OPS_CAST_CAST_H_
