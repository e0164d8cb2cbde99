#include "layers/sublayers.h"

#include <string>

namespace tfm {
namespace {

absl::StatusOr<std::unique_ptr<Layer>> CreateBlock(const LayerArgs& args, Attrs attrs) {
  LayerArgs block_args = args;
  block_args.attrs = std::move(attrs);
  return CreateLayer("residual", block_args);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Layer>> CreateSelfAttentionBlock(const LayerArgs& args,
                                                                bool causal) {
  return CreateBlock(args, {{"sublayer", args.model.attention_layer()},
                            {"sublayer_scope", std::string("self_attn")},
                            {"norm_scope", std::string("self_attn_layer_norm")},
                            {"self_attention", true},
                            {"causal", causal}});
}

absl::StatusOr<std::unique_ptr<Layer>> CreateEncoderAttentionBlock(const LayerArgs& args) {
  return CreateBlock(args, {{"sublayer", args.model.attention_layer()},
                            {"sublayer_scope", std::string("encoder_attn")},
                            {"norm_scope", std::string("encoder_attn_layer_norm")},
                            {"self_attention", false},
                            {"causal", false}});
}

absl::StatusOr<std::unique_ptr<Layer>> CreateFeedForwardBlock(const LayerArgs& args) {
  return CreateBlock(args, {{"sublayer", args.model.feed_forward_layer()},
                            {"norm_scope", std::string("final_layer_norm")}});
}

}  // namespace tfm
