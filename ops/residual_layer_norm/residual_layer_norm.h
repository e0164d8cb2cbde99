// residual_layer_norm: the post-norm residual connection of a Transformer
// block in one op, forward and backward:
//   sum = x + Dropout(h + h_bias),  out = LayerNorm(sum) * gain + bias,
// where x is the block's input (the residual), h the sublayer's output and
// h_bias an optional bias of h (the sublayer's last linear map's, when it
// leaves it out). It equals ops/dropout, ops/add and ops/layer_norm run one
// after the other, with the same Philox numbers for the mask (element i of
// h keeps when uniform i of `state` is >= p) and, on the CPU, the same bits:
// the row loops are layer_norm's. The fusion saves the memory traffic of the
// intermediate tensors: one read of x and h and one write of sum and out,
// and in backward one pass that writes dx and dh.
//
// x and h are [..., d] with d >= 1; h_bias, gain and bias are [d]. Outputs:
// out and sum like x (sum is what backward normalises again), mean and rstd
// x.shape[:-1] in f32. f32 on every device; bf16 and f16 on CUDA (statistics and
// the sum's arithmetic in f32; sum is rounded to the 16-bit type once, and the statistics
// are of the rounded sum, so that backward sees the values forward
// normalised).
//
// p = 0 (or evaluation) draws nothing. The mask is never stored: backward
// regenerates it from the same p and state.
#ifndef TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_H_
#define TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"  // kLayerNormDefaultEps

namespace tfm {

// The dropout of h: rate p in [0, 1] and the Philox state of its mask
// (Generator::Reserve(h.num_elements()); unused when p = 0).
struct ResidualDropout {
  double p = 0.0;
  PhiloxState state;
};

struct ResidualLayerNormOutputs {
  Tensor out;   // Shaped like x.
  Tensor sum;   // x + Dropout(h + h_bias), shaped like x.
  Tensor mean;  // f32 x.shape[:-1], of sum.
  Tensor rstd;  // f32 x.shape[:-1], of sum.
};

absl::StatusOr<ResidualLayerNormOutputs> ResidualLayerNorm(
    const Tensor& x, const Tensor& h, const std::optional<Tensor>& h_bias, const Tensor& gain,
    const Tensor& bias, const ResidualDropout& dropout, double eps = kLayerNormDefaultEps);

struct ResidualLayerNormGrads {
  Tensor dx;      // Shaped like x: the gradient of sum.
  Tensor dh;      // Shaped like h: dx through the dropout mask.
  Tensor dgain;   // [d]
  Tensor dbias;   // [d]
  Tensor dh_bias; // [d], the sum of dh over rows; undefined without h_bias.
};

// Gradients of sum(dout * ResidualLayerNorm(x, h, h_bias, gain, bias).out)
// from the forward's sum, mean and rstd and the same dropout.
absl::StatusOr<ResidualLayerNormGrads> ResidualLayerNormBackward(
    const Tensor& dout, const ResidualLayerNormOutputs& forward, const Tensor& gain,
    const ResidualDropout& dropout, bool has_h_bias);

}  // namespace tfm

#endif  // TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_H_
