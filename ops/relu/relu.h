// relu: out = max(x, 0). Backward takes the forward's output (not x), so a
// layer may keep either one: dx = dout where out > 0, else 0 (the gradient
// at 0 is 0, as in PyTorch). f32 on every device; f16 and bf16 on CUDA.
//
// Backward's `scale` serves a dropout applied to the ReLU's output: with
// z = Dropout(Relu(x), p), z > 0 exactly where x > 0 and the element was
// kept, so ReluBackward(dz, z, DropoutScale(p)) is DropoutBackward then
// ReluBackward in one pass, bit for bit, with no mask and no Relu(x) kept.
#ifndef TFM_OPS_RELU_RELU_H_
#define TFM_OPS_RELU_RELU_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Relu(const Tensor& x);

// Gradient of sum(dout * Relu(x)) given out = Relu(x): dout * scale where
// out > 0, else +0 (the product rounded once, in f32, as dropout's).
absl::StatusOr<Tensor> ReluBackward(const Tensor& dout, const Tensor& out, float scale = 1.0f);

}  // namespace tfm

#endif  // TFM_OPS_RELU_RELU_H_
