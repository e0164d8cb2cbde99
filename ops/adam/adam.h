// adam: one Adam step (Kingma & Ba) with bias correction, exactly as
// torch.optim.Adam (no amsgrad), updating in place; with weight_decay, as
// torch.optim.AdamW (Loshchilov & Hutter's decoupled decay, which fairseq's
// --weight-decay also applies). The defaults are the Transformer paper's:
// beta1 0.9, beta2 0.98, eps 1e-9, no weight decay.
#ifndef TFM_OPS_ADAM_ADAM_H_
#define TFM_OPS_ADAM_ADAM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/attrs.h"
#include "core/tensor.h"

namespace tfm {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
  int64_t step = 1;  // 1 for the first update: the bias corrections use it.
  // Decoupled: param *= 1 - lr * weight_decay before the step (0: Adam).
  double weight_decay = 0;
};

// With t = step:
//   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g^2
//   param = param * (1 - lr weight_decay)
//           - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// param, grad, m, v: f32 tensors of one shape; param, m and v are written in
// place (the op's outputs are these same tensors).
absl::Status AdamUpdate(const Tensor& param, const Tensor& grad, const Tensor& m,
                        const Tensor& v, const AdamOptions& options);

Attrs AdamAttrs(const AdamOptions& options);

// One tensor of a multi-tensor update: all f32 and of one shape, on one
// device with the others.
struct AdamTensors {
  Tensor param, grad, m, v;
};

// multi_tensor_adam: the same step over every entry of `tensors` in one
// launch, the gradients first clipped to a global norm of max_norm (0: no
// clipping) by the factor that ClipGradNorm would use, read on the device
// from `grad_sum_of_squares` (an f32 scalar from GradSumOfSquares in
// grad_norm.h), so no value comes back to the host. Equal bits to
// ClipGradNorm then AdamUpdate per tensor; the gradients are left as they
// were (the clipping happens as they are read).
//
// When grad_sum_of_squares or `skip_guard` (an f32 scalar on the same
// device; the trainer passes the update's loss) is not finite, the whole
// update is skipped on the device: no parameter or moment changes. So a
// trainer can leave a non-finite update unapplied without reading its norm
// back first (as PyTorch's fused Adam takes GradScaler's found_inf). Without
// a guard, the sum of squares guards itself.
absl::Status MultiTensorAdamUpdate(absl::Span<const AdamTensors> tensors,
                                   const Tensor& grad_sum_of_squares, double max_norm,
                                   const AdamOptions& options,
                                   const Tensor* skip_guard = nullptr);

}  // namespace tfm

#endif  // TFM_OPS_ADAM_ADAM_H_
