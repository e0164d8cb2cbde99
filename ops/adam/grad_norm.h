// The global L2 norm of a set of gradients and clipping by it, like
// torch.nn.utils.clip_grad_norm_. Built from two ops: the variadic
// multi_tensor_sum_of_squares (one launch over all gradients) and
// scale_in_place (f32 gradients, or bf16 ones on CUDA). The trainer leaves
// the clipping to multi_tensor_adam (adam.h), which reads the sum of
// squares on the device.
#ifndef TFM_OPS_ADAM_GRAD_NORM_H_
#define TFM_OPS_ADAM_GRAD_NORM_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// The sum over `grads` (all on one device; at least one) of every
// element's square, as an f32 scalar on their device, from one launch that
// nothing waits for. Each tensor is summed in double, in fixed chunks added
// in order, and the tensors' sums are added in list order in f32 on the
// CPU (so a list gives the bits of per-tensor sums added one by one); on
// CUDA all chunks' sums are added in double in a fixed order and rounded
// once (relative difference from the CPU within 1e-6 in tests). Every run
// gives the same bits on either device.
absl::StatusOr<Tensor> GradSumOfSquares(absl::Span<const Tensor> grads);

// The value of such a sum on the host (on a GPU, waits for it).
absl::StatusOr<double> ReadSumOfSquares(const Tensor& sum_of_squares);

// sqrt(sum over tensors and elements of x^2): GradSumOfSquares per run of
// gradients on one device, read back and added in double.
absl::StatusOr<double> GlobalGradNorm(absl::Span<const Tensor> grads);

// Every tensor of `tensors` multiplied by `factor` in place (scale_in_place,
// one launch per tensor): clipping, and the unscaling of dynamic loss
// scaling (a power of two, so exact).
absl::Status ScaleInPlace(absl::Span<const Tensor> tensors, double factor);

// Returns the global norm before clipping; when it exceeds max_norm, scales
// every gradient in place by max_norm / (norm + 1e-6) (torch's formula). A
// non-finite norm is InvalidArgument with error_if_nonfinite, else returned
// as is (and the gradients are left alone when it is NaN).
absl::StatusOr<double> ClipGradNorm(absl::Span<const Tensor> grads, double max_norm,
                                    bool error_if_nonfinite = false);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_GRAD_NORM_H_
