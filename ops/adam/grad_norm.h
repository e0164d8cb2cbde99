// The global L2 norm of a set of gradients and clipping by it, like
// torch.nn.utils.clip_grad_norm_. Built from two ops that a CUDA kernel can
// implement per tensor: sum_of_squares and scale_in_place (f32 gradients,
// or bf16 ones on CUDA).
#ifndef TFM_OPS_ADAM_GRAD_NORM_H_
#define TFM_OPS_ADAM_GRAD_NORM_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// sqrt(sum over tensors and elements of x^2), accumulated in double.
absl::StatusOr<double> GlobalGradNorm(absl::Span<const Tensor> grads);

// Returns the global norm before clipping; when it exceeds max_norm, scales
// every gradient in place by max_norm / (norm + 1e-6) (torch's formula). A
// non-finite norm is InvalidArgument with error_if_nonfinite, else returned
// as is (and the gradients are left alone when it is NaN).
absl::StatusOr<double> ClipGradNorm(absl::Span<const Tensor> grads, double max_norm,
                                    bool error_if_nonfinite = false);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_GRAD_NORM_H_
