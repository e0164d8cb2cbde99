// encoder_layer (section 3.1): self-attention then feed-forward, each in a
// residual block. Inputs {x [batch, len, d_model], lengths [batch] i32};
// outputs {y}; backward {dx, -}. Padded keys are masked; padded queries
// compute values nobody reads.
#include <memory>

#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/sublayers.h"

namespace tfm {
namespace {

class EncoderLayer : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<EncoderLayer>();
    TFM_ASSIGN_OR_RETURN(layer->self_attention_, CreateSelfAttentionBlock(args, /*causal=*/false));
    TFM_ASSIGN_OR_RETURN(layer->feed_forward_, CreateFeedForwardBlock(args));
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.size() != 2) return absl::InvalidArgumentError("encoder_layer takes {x, lengths}");
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> attended, self_attention_->Forward(context, inputs));
    return feed_forward_->Forward(context, {attended[0]});
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> d_attended, feed_forward_->Backward(output_grads));
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> dx, self_attention_->Backward({d_attended[0]}));
    return std::vector<Tensor>{dx[0], Tensor()};
  }

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters = self_attention_->Parameters();
    for (Parameter* p : feed_forward_->Parameters()) parameters.push_back(p);
    return parameters;
  }

 private:
  std::unique_ptr<Layer> self_attention_, feed_forward_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "encoder_layer",
    .doc = "self-attention + feed-forward, each LayerNorm(x + Dropout(Sublayer(x)))",
    .create = EncoderLayer::Create,
});

}  // namespace
}  // namespace tfm
