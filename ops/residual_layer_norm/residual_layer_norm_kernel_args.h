// What the residual_layer_norm kernels of every device read from their
// context: the dropout (its threshold and scale as ops/dropout computes
// them, so that the masks and scaled values agree with the dropout op), and
// where the optional h_bias is.
#ifndef TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_KERNEL_ARGS_H_
#define TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_KERNEL_ARGS_H_

#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "ops/dropout/dropout_kernel_args.h"

namespace tfm {

struct ResidualDropoutArgs {
  DropoutScaling scaling;
  PhiloxState state;
};

inline absl::StatusOr<ResidualDropoutArgs> ReadResidualDropoutArgs(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const DropoutScaling scaling, ReadDropoutScaling(context));
  TFM_ASSIGN_OR_RETURN(const PhiloxState state, PhiloxStateFromAttrs(context.attrs()));
  return ResidualDropoutArgs{scaling, state};
}

// The forward's inputs by name: {x, h, gain, bias} for residual_layer_norm,
// {x, h, h_bias, gain, bias} for residual_bias_layer_norm.
struct ResidualLayerNormInputs {
  const Tensor& x;
  const Tensor& h;
  const Tensor* h_bias;  // Null without one.
  const Tensor& gain;
  const Tensor& bias;
};

inline ResidualLayerNormInputs ReadResidualLayerNormInputs(const KernelContext& context) {
  const bool has_h_bias = context.num_inputs() == 5;
  const int gain = has_h_bias ? 3 : 2;
  return ResidualLayerNormInputs{context.input(0), context.input(1),
                                 has_h_bias ? &context.input(2) : nullptr, context.input(gain),
                                 context.input(gain + 1)};
}

// Whether residual_layer_norm_backward sums dh into dh_bias (attribute
// "h_bias"; without it dh_bias is an empty [0] tensor).
inline absl::StatusOr<bool> HasHBias(const KernelContext& context) {
  return context.attrs().GetOr<bool>("h_bias", false);
}

}  // namespace tfm

#endif  // TFM_OPS_RESIDUAL_LAYER_NORM_RESIDUAL_LAYER_NORM_KERNEL_ARGS_H_
