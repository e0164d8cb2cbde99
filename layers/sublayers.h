// Building the residual-wrapped sublayers of encoder and decoder layers by
// the names the model config gives, so a plugin layer replaces a built-in
// one for every layer of the stack.
#ifndef TFM_LAYERS_SUBLAYERS_H_
#define TFM_LAYERS_SUBLAYERS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/layer_registry.h"

namespace tfm {

// Self-attention ("self_attn", norm "self_attn_layer_norm"): inputs
// {x, key_lengths}, backward {dx, -}.
absl::StatusOr<std::unique_ptr<Layer>> CreateSelfAttentionBlock(const LayerArgs& args, bool causal);

// Encoder-decoder attention ("encoder_attn", norm "encoder_attn_layer_norm"):
// inputs {x, memory, memory_lengths}, backward {dx, dmemory, -}.
absl::StatusOr<std::unique_ptr<Layer>> CreateEncoderAttentionBlock(const LayerArgs& args);

// Feed-forward ("fc1", "fc2", norm "final_layer_norm"): inputs {x}, backward
// {dx}.
absl::StatusOr<std::unique_ptr<Layer>> CreateFeedForwardBlock(const LayerArgs& args);

}  // namespace tfm

#endif  // TFM_LAYERS_SUBLAYERS_H_
