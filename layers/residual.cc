// residual: the sublayer wrapper of section 3.1 around a registered layer.
//   post-norm (the paper):  y = LayerNorm(x + Dropout(Sublayer(x, ...)))
//   pre-norm (option):      y = x + Dropout(Sublayer(LayerNorm(x), ...))
// Attributes: sublayer (a registered layer name), sublayer_scope (its
// parameters' prefix under this scope; "" for none), norm_scope (the norm's
// parameter prefix); all attributes are passed on to the sublayer. Inputs
// {x, extra...}: the sublayer gets {x or LayerNorm(x), extra...}; backward
// returns {dx, the sublayer's gradients of the extras}. Dropout is the
// model's dropout (P_drop). Post-norm runs dropout, the residual add and the
// norm as one op (ops/residual_layer_norm: the same values, one pass over
// memory instead of three, each way). 16-bit decoding may keep the stream in
// f32 around 16-bit sublayers (ForwardContext::sublayer_dtype).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/dropout_site.h"
#include "layers/norm.h"
#include "ops/add/add.h"
#include "ops/cast/cast.h"

namespace tfm {
namespace {

class Residual : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<Residual>();
    TFM_ASSIGN_OR_RETURN(std::string sublayer, args.attrs.Get<std::string>("sublayer"));
    TFM_ASSIGN_OR_RETURN(std::string sublayer_scope,
                         args.attrs.GetOr<std::string>("sublayer_scope", ""));
    TFM_ASSIGN_OR_RETURN(std::string norm_scope, args.attrs.Get<std::string>("norm_scope"));
    LayerArgs sublayer_args = args;
    if (!sublayer_scope.empty()) absl::StrAppend(&sublayer_args.scope, sublayer_scope, ".");
    TFM_ASSIGN_OR_RETURN(layer->sublayer_, CreateLayer(sublayer, sublayer_args));
    TFM_ASSIGN_OR_RETURN(layer->norm_, Norm::Create(args, norm_scope));
    layer->pre_norm_ = args.model.norm_position() == config::ModelConfig::PRE;
    layer->dropout_ = DropoutSite(args.model.dropout());
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.empty()) return absl::InvalidArgumentError("residual takes {x, extra...}");
    const Tensor& x = inputs[0];
    std::vector<Tensor> sublayer_inputs(inputs.begin(), inputs.end());
    if (pre_norm_) {
      TFM_ASSIGN_OR_RETURN(sublayer_inputs[0], norm_.Forward(x, context.keeps()));
    }
    // An f32 residual stream around 16-bit sublayers (ForwardContext::
    // sublayer_dtype): the sublayer's input rounded once, its output
    // widened for the sum and the norm.
    const bool cast = context.sublayer_dtype != x.dtype() && x.dtype() == DType::kF32;
    if (cast) {
      TFM_ASSIGN_OR_RETURN(sublayer_inputs[0], Cast(sublayer_inputs[0], context.sublayer_dtype));
    }
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> sublayer_out,
                         sublayer_->Forward(context, sublayer_inputs));
    if (cast) {
      TFM_ASSIGN_OR_RETURN(sublayer_out[0], Cast(sublayer_out[0], x.dtype()));
    }
    if (!pre_norm_) {
      TFM_RETURN_IF_ERROR(dropout_.Begin(context, sublayer_out[0].num_elements()));
      TFM_ASSIGN_OR_RETURN(
          Tensor y, norm_.ForwardResidual(x, sublayer_out[0], dropout_.rate(), dropout_.state(),
                                          context.keeps()));
      return std::vector<Tensor>{y};
    }
    TFM_ASSIGN_OR_RETURN(Tensor dropped, dropout_.Forward(context, sublayer_out[0]));
    TFM_ASSIGN_OR_RETURN(Tensor sum, Add(x, dropped));
    return std::vector<Tensor>{sum};
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    Tensor d_sum, d_sublayer_out;
    if (pre_norm_) {
      d_sum = output_grads[0];
      TFM_ASSIGN_OR_RETURN(d_sublayer_out, dropout_.Backward(d_sum));
    } else {
      TFM_ASSIGN_OR_RETURN(
          Norm::ResidualGrads residual,
          norm_.BackwardResidual(output_grads[0], dropout_.rate(), dropout_.state()));
      d_sum = std::move(residual.dx);
      d_sublayer_out = std::move(residual.dh);
    }
    if (!pre_norm_ && sublayer_->AddsInputGradient() &&
        d_sum.dtype() == d_sublayer_out.dtype()) {
      // The sublayer's products of x add into the residual path's gradient
      // (post-norm: x reaches the sublayer as it is).
      return sublayer_->BackwardAdding({d_sublayer_out}, d_sum);
    }
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> grads, sublayer_->Backward({d_sublayer_out}));
    Tensor d_sublayer_x = grads[0];
    if (pre_norm_) {
      TFM_ASSIGN_OR_RETURN(d_sublayer_x, norm_.Backward(d_sublayer_x));
    }
    TFM_ASSIGN_OR_RETURN(grads[0], Add(d_sum, d_sublayer_x));
    return grads;
  }

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters = sublayer_->Parameters();
    norm_.AppendParameters(parameters);
    return parameters;
  }

 private:
  std::unique_ptr<Layer> sublayer_;
  Norm norm_;
  bool pre_norm_ = false;
  DropoutSite dropout_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "residual",
    .doc = "LayerNorm(x + Dropout(Sublayer(x))), or pre-norm x + Dropout(Sublayer(LayerNorm(x)))",
    .create = Residual::Create,
});

}  // namespace
}  // namespace tfm
