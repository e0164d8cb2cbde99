// layer_norm over the last axis with a learned gain and bias, as
// torch.nn.LayerNorm(d, eps):
//   out = (x - mean) * rstd * gain + bias,  rstd = 1 / sqrt(var + eps),
// with the biased variance. The forward also returns each row's mean and
// rstd (shape x.shape[:-1]), which the backward takes instead of
// recomputing them. x is [..., d] with d >= 1; gain and bias are [d]. x,
// gain, bias, out and the gradients are f32, or bf16 or f16 on CUDA (statistics in
// f32, one rounding at the store); mean and rstd are f32.
#ifndef TFM_OPS_LAYER_NORM_LAYER_NORM_H_
#define TFM_OPS_LAYER_NORM_LAYER_NORM_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"  // kLayerNormDefaultEps

namespace tfm {

struct LayerNormOutputs {
  Tensor out;   // Shaped like x.
  Tensor mean;  // x.shape[:-1]
  Tensor rstd;  // x.shape[:-1]
};

absl::StatusOr<LayerNormOutputs> LayerNorm(const Tensor& x, const Tensor& gain,
                                           const Tensor& bias,
                                           double eps = kLayerNormDefaultEps);

struct LayerNormGrads {
  Tensor dx;
  Tensor dgain;
  Tensor dbias;
};

// Gradients of sum(dout * LayerNorm(x, gain, bias).out), given the forward's
// mean and rstd.
absl::StatusOr<LayerNormGrads> LayerNormBackward(const Tensor& dout, const Tensor& x,
                                                 const Tensor& gain, const Tensor& mean,
                                                 const Tensor& rstd);

}  // namespace tfm

#endif  // TFM_OPS_LAYER_NORM_LAYER_NORM_H_
