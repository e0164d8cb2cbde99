// decoder_layer (section 3.1): causal self-attention, attention over the
// encoder output, feed-forward, each in a residual block. Inputs
// {x [batch, tgt_len, d_model], memory [batch, src_len, d_model],
// memory_lengths [batch] i32}; outputs {y}; backward {dx, dmemory, -}.
// Self-attention needs no target padding mask: targets are padded at the
// end, so the causal mask already hides padded keys from every real query.
#include <memory>

#include "core/layer_registry.h"
#include "core/status_macros.h"
#include "layers/sublayers.h"

namespace tfm {
namespace {

class DecoderLayer : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<Layer>> Create(const LayerArgs& args) {
    auto layer = std::make_unique<DecoderLayer>();
    TFM_ASSIGN_OR_RETURN(layer->self_attention_, CreateSelfAttentionBlock(args, /*causal=*/true));
    TFM_ASSIGN_OR_RETURN(layer->encoder_attention_, CreateEncoderAttentionBlock(args));
    TFM_ASSIGN_OR_RETURN(layer->feed_forward_, CreateFeedForwardBlock(args));
    return std::unique_ptr<Layer>(std::move(layer));
  }

  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                              absl::Span<const Tensor> inputs) override {
    if (inputs.size() != 3) {
      return absl::InvalidArgumentError("decoder_layer takes {x, memory, memory_lengths}");
    }
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> attended,
                         self_attention_->Forward(context, {inputs[0], Tensor()}));
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> crossed,
                         encoder_attention_->Forward(context, {attended[0], inputs[1], inputs[2]}));
    return feed_forward_->Forward(context, {crossed[0]});
  }

  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) override {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> d_crossed, feed_forward_->Backward(output_grads));
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> d_attended,
                         encoder_attention_->Backward({d_crossed[0]}));
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> dx, self_attention_->Backward({d_attended[0]}));
    return std::vector<Tensor>{dx[0], d_attended[1], Tensor()};
  }

  std::vector<Parameter*> Parameters() override {
    std::vector<Parameter*> parameters;
    for (Layer* block : {self_attention_.get(), encoder_attention_.get(), feed_forward_.get()}) {
      for (Parameter* p : block->Parameters()) parameters.push_back(p);
    }
    return parameters;
  }

 private:
  std::unique_ptr<Layer> self_attention_, encoder_attention_, feed_forward_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "decoder_layer",
    .doc = "causal self-attention + encoder-decoder attention + feed-forward",
    .create = DecoderLayer::Create,
});

}  // namespace
}  // namespace tfm
