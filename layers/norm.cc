#include "layers/norm.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "layers/parameter_gradients.h"
#include "layers/parameter_init.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/residual_layer_norm/residual_layer_norm.h"

namespace tfm {

absl::StatusOr<Norm> Norm::Create(const LayerArgs& args, absl::string_view name) {
  Norm norm;
  const int64_t d = args.model.d_model();
  TFM_ASSIGN_OR_RETURN(
      norm.gain_, MakeParameter(args, absl::StrCat(name, ".weight"), {d}, ParameterInit::kOnes));
  TFM_ASSIGN_OR_RETURN(
      norm.bias_, MakeParameter(args, absl::StrCat(name, ".bias"), {d}, ParameterInit::kZeros));
  norm.eps_ = args.model.layer_norm_epsilon();
  return norm;
}

absl::StatusOr<Tensor> Norm::Forward(const Tensor& x, bool keep) {
  TFM_ASSIGN_OR_RETURN(const Tensor gain, ValueFor(gain_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(const Tensor bias, ValueFor(bias_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(LayerNormOutputs out, LayerNorm(x, gain, bias, eps_));
  if (!keep) return out.out;
  x_ = x;
  mean_ = out.mean;
  rstd_ = out.rstd;
  return out.out;
}

absl::StatusOr<Tensor> Norm::Backward(const Tensor& dout) {
  TFM_ASSIGN_OR_RETURN(const Tensor gain, ValueFor(gain_, x_.dtype()));
  TFM_ASSIGN_OR_RETURN(LayerNormGrads grads, LayerNormBackward(dout, x_, gain, mean_, rstd_));
  TFM_RETURN_IF_ERROR(AccumulateGrad(gain_, grads.dgain));
  TFM_RETURN_IF_ERROR(AccumulateGrad(bias_, grads.dbias));
  x_ = mean_ = rstd_ = Tensor();
  return grads.dx;
}

absl::StatusOr<Tensor> Norm::ForwardResidual(const Tensor& x, const Tensor& h, double p,
                                             const PhiloxState& state, bool keep) {
  TFM_ASSIGN_OR_RETURN(const Tensor gain, ValueFor(gain_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(const Tensor bias, ValueFor(bias_, x.dtype()));
  TFM_ASSIGN_OR_RETURN(ResidualLayerNormOutputs out,
                       ResidualLayerNorm(x, h, std::nullopt, gain, bias,
                                         ResidualDropout{p, state}, eps_));
  if (!keep) return out.out;
  x_ = out.sum;
  mean_ = out.mean;
  rstd_ = out.rstd;
  return out.out;
}

absl::StatusOr<Norm::ResidualGrads> Norm::BackwardResidual(const Tensor& dout, double p,
                                                           const PhiloxState& state) {
  TFM_ASSIGN_OR_RETURN(const Tensor gain, ValueFor(gain_, x_.dtype()));
  TFM_ASSIGN_OR_RETURN(
      ResidualLayerNormGrads grads,
      ResidualLayerNormBackward(dout, ResidualLayerNormOutputs{Tensor(), x_, mean_, rstd_}, gain,
                                ResidualDropout{p, state}, /*has_h_bias=*/false));
  TFM_RETURN_IF_ERROR(AccumulateGrad(gain_, grads.dgain));
  TFM_RETURN_IF_ERROR(AccumulateGrad(bias_, grads.dbias));
  x_ = mean_ = rstd_ = Tensor();
  return ResidualGrads{std::move(grads.dx), std::move(grads.dh)};
}

}  // namespace tfm
