// stack: N copies of a registered layer (scopes "layers.0." ..), each taking
// the previous one's output and the same extra inputs, then a final
// LayerNorm ("layer_norm") with pre-norm, where the residual stream is not
// normalised otherwise. Attributes: layer (name), num_layers. Inputs
// {x, extra...}; outputs {y}; backward {dx, each extra's gradient summed over
// the layers (undefined where no layer gives one)}. The encoder is a stack of
// encoder_layer with extra {lengths}, the decoder one of decoder_layer with
// extras {memory, memory_lengths}.
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/norm.h"
#include "ops/add/add.h"

namespace tfm {
namespace {

class Stack : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto stack = std::make_unique<Stack>();
    TFM_ASSIGN_OR_RETURN(std::string layer, args.attrs.Get<std::string>("layer"));
    TFM_ASSIGN_OR_RETURN(int64_t num_layers, args.attrs.Get<int64_t>("num_layers"));
    if (num_layers < 1) {
      return absl::InvalidArgumentError(absl::StrCat("stack ", args.scope, ": num_layers is ",
                                                     num_layers, ", must be at least 1"));
    }
    for (int64_t i = 0; i < num_layers; ++i) {
      LayerArgs layer_args = args;
      layer_args.attrs = Attrs();
      absl::StrAppend(&layer_args.scope, "layers.", i, ".");
      TFM_ASSIGN_OR_RETURN(std::unique_ptr<Layer> built, CreateLayer(layer, layer_args));
      stack->layers_.push_back(std::move(built));
    }
    if (args.model.norm_position() == config::ModelConfig::PRE) {
      TFM_ASSIGN_OR_RETURN(stack->final_norm_.emplace(), Norm::Create(args, "layer_norm"));
    }
    return std::unique_ptr<Layer>(std::move(stack));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.empty()) return absl::InvalidArgumentError("stack takes {x, extra...}");
    std::vector<Tensor> layer_inputs(inputs.begin(), inputs.end());
    for (const std::unique_ptr<Layer>& layer : layers_) {
      TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, layer->Forward(context, layer_inputs));
      layer_inputs[0] = out[0];
    }
    if (final_norm_) {
      TFM_ASSIGN_OR_RETURN(layer_inputs[0], final_norm_->Forward(layer_inputs[0], context.keeps()));
    }
    return std::vector<Tensor>{layer_inputs[0]};
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    Tensor dx = output_grads[0];
    if (final_norm_) {
      TFM_ASSIGN_OR_RETURN(dx, final_norm_->Backward(dx));
    }
    std::vector<Tensor> grads;
    for (auto layer = layers_.rbegin(); layer != layers_.rend(); ++layer) {
      TFM_ASSIGN_OR_RETURN(std::vector<Tensor> layer_grads, (*layer)->Backward({dx}));
      dx = layer_grads[0];
      if (grads.empty()) {
        grads = std::move(layer_grads);
        continue;
      }
      for (size_t i = 1; i < grads.size(); ++i) {
        if (!layer_grads[i].defined()) continue;
        if (!grads[i].defined()) {
          grads[i] = layer_grads[i];
        } else {
          TFM_ASSIGN_OR_RETURN(grads[i], Add(grads[i], layer_grads[i]));
        }
      }
    }
    grads[0] = dx;
    return grads;
  }

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters;
    for (const std::unique_ptr<Layer>& layer : layers_) {
      for (Parameter* p : layer->Parameters()) parameters.push_back(p);
    }
    if (final_norm_) final_norm_->AppendParameters(parameters);
    return parameters;
  }

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::optional<Norm> final_norm_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "stack",
    .doc = "N layers of one registered kind (+ final LayerNorm with pre-norm)",
    .create = Stack::Create,
});

}  // namespace
}  // namespace tfm
