#include "ops/residual_layer_norm/residual_layer_norm.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"
#include "ops/residual_layer_norm/residual_layer_norm_kernel_args.h"

namespace tfm {
namespace {

absl::Status ValidateDropoutAttrs(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const double p, context.attrs().Get<double>("p"));
  if (!(p >= 0.0 && p <= 1.0)) return context.Error(absl::StrCat("p = ", p, " is not in [0, 1]"));
  return PhiloxStateFromAttrs(context.attrs()).status();
}

// x [..., d] with d >= 1; h as x; h_bias, gain and bias [d]; eps finite >= 0.
absl::Status ValidateResidualLayerNorm(const KernelContext& context) {
  const ResidualLayerNormInputs in = ReadResidualLayerNormInputs(context);
  if (in.x.rank() < 1 || in.x.dim(-1) < 1) return context.Error("x must be [..., d] with d >= 1");
  if (in.h.shape() != in.x.shape()) return context.Error("h must have x's shape");
  const Shape row{in.x.dim(-1)};
  const std::string row_text = ShapeToString(row);
  if (in.h_bias != nullptr && in.h_bias->shape() != row) {
    return context.Error(absl::StrCat("h_bias must be ", row_text));
  }
  if (in.gain.shape() != row) return context.Error(absl::StrCat("gain must be ", row_text));
  if (in.bias.shape() != row) return context.Error(absl::StrCat("bias must be ", row_text));
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  if (!(eps >= 0.0 && std::isfinite(eps))) {
    return context.Error(absl::StrCat("eps = ", eps, " must be finite and >= 0"));
  }
  return ValidateDropoutAttrs(context);
}

// out and sum as x; mean and rstd one per row.
absl::StatusOr<std::vector<Shape>> ResidualLayerNormShapes(const KernelContext& context) {
  const Shape& x = context.input(0).shape();
  const Shape rows(x.begin(), x.end() - 1);
  return std::vector<Shape>{x, x, rows, rows};
}

// dout and sum [..., d]; gain [d]; mean and rstd f32 sum.shape[:-1].
absl::Status ValidateResidualLayerNormBackward(const KernelContext& context) {
  const Tensor& sum = context.input(1);
  if (sum.rank() < 1 || sum.dim(-1) < 1) return context.Error("sum must be [..., d] with d >= 1");
  if (context.input(0).shape() != sum.shape()) return context.Error("dout must have sum's shape");
  if (context.input(2).shape() != Shape{sum.dim(-1)}) {
    return context.Error(absl::StrCat("gain must be [", sum.dim(-1), "]"));
  }
  if (context.input(3).dtype() != DType::kF32 || context.input(4).dtype() != DType::kF32) {
    return context.Error("mean and rstd must be f32");
  }
  const Shape rows(sum.shape().begin(), sum.shape().end() - 1);
  if (context.input(3).shape() != rows || context.input(4).shape() != rows) {
    return context.Error(absl::StrCat("mean and rstd must be ", ShapeToString(rows)));
  }
  TFM_RETURN_IF_ERROR(HasHBias(context).status());
  return ValidateDropoutAttrs(context);
}

// dx and dh as sum; dgain and dbias [d]; dh_bias [d], or [0] without h_bias.
absl::StatusOr<std::vector<Shape>> ResidualLayerNormBackwardShapes(const KernelContext& context) {
  const Shape& sum = context.input(1).shape();
  TFM_ASSIGN_OR_RETURN(const bool has_h_bias, HasHBias(context));
  const int64_t d = sum.back();
  return std::vector<Shape>{sum, sum, {d}, {d}, {has_h_bias ? d : 0}};
}

constexpr char kForwardDoc[] =
    "sum = x + dropout(h [+ h_bias], p, seed, stream, offset); out = layer_norm(sum, gain, bias)";

TFM_REGISTER_OP(OpDef{
    .name = "residual_layer_norm",
    .inputs = {"x", "h", "gain", "bias"},
    .outputs = {"out", "sum", "mean", "rstd"},
    .attrs = {"p", "seed", "stream", "offset", "eps"},
    .doc = kForwardDoc,
    .validate = ValidateResidualLayerNorm,
    .kernel_dtype_inputs = {0, 1, 2, 3},
    .output_shapes = ResidualLayerNormShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "residual_bias_layer_norm",
    .inputs = {"x", "h", "h_bias", "gain", "bias"},
    .outputs = {"out", "sum", "mean", "rstd"},
    .attrs = {"p", "seed", "stream", "offset", "eps"},
    .doc = kForwardDoc,
    .validate = ValidateResidualLayerNorm,
    .kernel_dtype_inputs = {0, 1, 2, 3, 4},
    .output_shapes = ResidualLayerNormShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "residual_layer_norm_backward",
    .inputs = {"dout", "sum", "gain", "mean", "rstd"},
    .outputs = {"dx", "dh", "dgain", "dbias", "dh_bias"},
    .attrs = {"p", "seed", "stream", "offset", "h_bias"},
    .doc = "gradients of residual_layer_norm (h_bias=true: also of residual_bias_layer_norm's "
           "h_bias; else dh_bias is [0])",
    .validate = ValidateResidualLayerNormBackward,
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = ResidualLayerNormBackwardShapes,
});

Attrs DropoutAttrs(const ResidualDropout& dropout) {
  Attrs attrs;
  attrs.Set("p", dropout.p);
  SetPhiloxAttrs(dropout.state, &attrs);
  return attrs;
}

}  // namespace

absl::StatusOr<ResidualLayerNormOutputs> ResidualLayerNorm(
    const Tensor& x, const Tensor& h, const std::optional<Tensor>& h_bias, const Tensor& gain,
    const Tensor& bias, const ResidualDropout& dropout, double eps) {
  Attrs attrs = DropoutAttrs(dropout);
  attrs.Set("eps", eps);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       h_bias.has_value()
                           ? RunOp("residual_bias_layer_norm", {x, h, *h_bias, gain, bias}, attrs)
                           : RunOp("residual_layer_norm", {x, h, gain, bias}, attrs));
  return ResidualLayerNormOutputs{std::move(out[0]), std::move(out[1]), std::move(out[2]),
                                  std::move(out[3])};
}

absl::StatusOr<ResidualLayerNormGrads> ResidualLayerNormBackward(
    const Tensor& dout, const ResidualLayerNormOutputs& forward, const Tensor& gain,
    const ResidualDropout& dropout, bool has_h_bias) {
  Attrs attrs = DropoutAttrs(dropout);
  attrs.Set("h_bias", has_h_bias);
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      RunOp("residual_layer_norm_backward", {dout, forward.sum, gain, forward.mean, forward.rstd},
            attrs));
  return ResidualLayerNormGrads{std::move(out[0]), std::move(out[1]), std::move(out[2]),
                                std::move(out[3]), has_h_bias ? std::move(out[4]) : Tensor()};
}

}  // namespace tfm
