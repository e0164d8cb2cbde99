// relu: out = max(x, 0). Backward takes the forward's output (not x), so a
// layer may keep either one: dx = dout where out > 0, else 0 (the gradient
// at 0 is 0, as in PyTorch). f32 on every device; f16 and bf16 on CUDA.
#ifndef TFM_OPS_RELU_RELU_H_
#define TFM_OPS_RELU_RELU_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Relu(const Tensor& x);

// Gradient of sum(dout * Relu(x)) given out = Relu(x).
absl::StatusOr<Tensor> ReluBackward(const Tensor& dout, const Tensor& out);

}  // namespace tfm

#endif  // TFM_OPS_RELU_RELU_H_
