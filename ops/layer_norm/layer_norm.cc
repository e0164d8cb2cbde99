#include "ops/layer_norm/layer_norm.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// x [..., d] and gain [d] at inputs `first` and `first + 1` (of the
// kernel's dtype: OpDef::kernel_dtype_inputs).
absl::Status ValidateXAndGain(const KernelContext& context, int first) {
  const Tensor& x = context.input(first);
  if (x.rank() < 1 || x.dim(-1) < 1) return context.Error("x must be [..., d] with d >= 1");
  if (context.input(first + 1).shape() != Shape{x.dim(-1)}) {
    return context.Error(absl::StrCat("gain must be [", x.dim(-1), "]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLayerNorm(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateXAndGain(context, 0));
  if (context.input(2).shape() != context.input(1).shape()) {
    return context.Error("bias must have gain's shape");
  }
  TFM_ASSIGN_OR_RETURN(double eps, LayerNormEps(context));
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    return context.Error(absl::StrCat("eps = ", eps, " must be finite and >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateLayerNormBackward(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateXAndGain(context, 1));
  const Tensor& x = context.input(1);
  if (context.input(3).dtype() != DType::kF32 || context.input(4).dtype() != DType::kF32) {
    return context.Error("mean and rstd must be f32");
  }
  if (context.input(0).shape() != x.shape()) return context.Error("dout must have x's shape");
  const Shape rows(x.shape().begin(), x.shape().end() - 1);
  if (context.input(3).shape() != rows || context.input(4).shape() != rows) {
    return context.Error(absl::StrCat("mean and rstd must be ", ShapeToString(rows)));
  }
  return absl::OkStatus();
}

// out [..., d] as x; mean and rstd one per row.
absl::StatusOr<std::vector<Shape>> LayerNormShapes(const KernelContext& context) {
  const Shape& x = context.input(0).shape();
  const Shape rows(x.begin(), x.end() - 1);
  return std::vector<Shape>{x, rows, rows};
}

// dx as x, dgain and dbias [d].
absl::StatusOr<std::vector<Shape>> LayerNormBackwardShapes(const KernelContext& context) {
  const Tensor& x = context.input(1);
  return std::vector<Shape>{x.shape(), {x.dim(-1)}, {x.dim(-1)}};
}

TFM_REGISTER_OP(OpDef{
    .name = "layer_norm",
    .inputs = {"x", "gain", "bias"},
    .outputs = {"out", "mean", "rstd"},
    .attrs = {"eps"},
    .doc = "out = (x - mean) / sqrt(var + eps) * gain + bias over the last axis",
    .validate = ValidateLayerNorm,
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = LayerNormShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "layer_norm_backward",
    .inputs = {"dout", "x", "gain", "mean", "rstd"},
    .outputs = {"dx", "dgain", "dbias"},
    .doc = "gradients of sum(dout * layer_norm(x, gain, bias).out)",
    .validate = ValidateLayerNormBackward,
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = LayerNormBackwardShapes,
});

}  // namespace

absl::StatusOr<LayerNormOutputs> LayerNorm(const Tensor& x, const Tensor& gain,
                                           const Tensor& bias, double eps) {
  Attrs attrs;
  attrs.Set("eps", eps);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("layer_norm", {x, gain, bias}, attrs));
  return LayerNormOutputs{out[0], out[1], out[2]};
}

absl::StatusOr<LayerNormGrads> LayerNormBackward(const Tensor& dout, const Tensor& x,
                                                 const Tensor& gain, const Tensor& mean,
                                                 const Tensor& rstd) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("layer_norm_backward", {dout, x, gain, mean, rstd}));
  return LayerNormGrads{out[0], out[1], out[2]};
}

}  // namespace tfm
