// Layers: parameterised building blocks (attention, feed-forward, ...) with
// explicit Forward and Backward, registered by the name configs use.
#ifndef TFM_CORE_LAYER_REGISTRY_H_
#define TFM_CORE_LAYER_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/attrs.h"
#include "core/config/task_config.pb.h"
#include "core/device.h"
#include "core/registry.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

class DecodingCache;  // layers/decoding_cache.h

// A trainable tensor and its gradient, owned by a layer. `name` is its
// state_dict key (e.g. "encoder.layers.0.self_attn.q_proj.weight").
// Backward passes add into `grad` (shaped like `value`) until the trainer
// zeroes it, so gradients accumulate over micro-batches. An undefined
// `grad` is a zero one that AccumulateGrad has not yet reached (a model
// that says AccumulatesThroughAccumulateGrad: core/trainable_model.h).
struct Parameter {
  std::string name;
  Tensor value;  // The master copy: f32, what the optimizer updates and checkpoints hold.
  Tensor grad;   // f32, whatever dtype the passes compute in; undefined: zero (above).
  // `value` rounded to the dtype a model's passes compute in (bf16 mixed
  // precision), made once per pass by the model so that every layer reads
  // one copy; undefined while the model computes in f32
  // (layers/parameter_init.h: RoundComputeCopies, ValueFor).
  Tensor compute_copy;
  // Called by AccumulateGrad after each addition into `grad` (when set), so
  // that data-parallel training (runtime/distributed/gradient_reducer.h) can
  // sum a gradient across ranks while the backward pass goes on.
  std::function<void()> on_grad_accumulated;
};

// How one forward pass runs. Dropout draws only from `rng` (never hidden
// state): each dropout reserves its numbers in call order, so the generator's
// (seed, stream, offset) at the start of a pass fixes every mask, and a
// resumed run reproduces them. Backward regenerates masks from the states
// its forward kept, so it needs no context.
struct ForwardContext {
  bool training = false;     // False: every dropout is the identity.
  Generator* rng = nullptr;  // Required when training.
  // Incremental decoding (inference only): inputs hold one new position per
  // row, at cache->position(); layers that look at earlier positions keep
  // them in the cache (attention's keys and values), and positional
  // encodings start at that position. Null for whole sequences.
  DecodingCache* cache = nullptr;
  // A search's whole-sequence inference pass (its encoder): the products go
  // through this cache's DecodingLinear, in its precision (int8 with
  // --quantize=int8) with its prepared weights, and nothing is kept for a
  // backward pass. Null otherwise.
  DecodingCache* products = nullptr;
  // The pass's token ids were checked on the host (the model built them
  // from a batch's host ids): gathers on a GPU skip their own check, and
  // the wait for the GPU it costs.
  bool ids_checked = false;
  // 16-bit decoding with an f32 residual stream (decode.f32_residual): the
  // dtype residual blocks run their sublayers in (their input cast to it,
  // their output back to the stream's f32); kF32: as the stream, no casts.
  DType sublayer_dtype = DType::kF32;

  // Whether layers keep what a backward pass needs: not in a decoding step,
  // which keeps nothing in the layers (only in its cache), so that several
  // batches' steps may run on one model at once (decode.inter_threads).
  bool keeps() const { return cache == nullptr; }
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Computes outputs and keeps exactly what Backward needs (one pass in
  // flight per layer: a second Forward replaces what the first kept).
  virtual absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext& context,
                                                      absl::Span<const Tensor> inputs) = 0;
  // Given d(loss)/d(outputs), accumulates parameter gradients and returns
  // d(loss)/d(inputs).
  virtual absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor> output_grads) = 0;
  // Backward with the gradient of input 0 added into `input_grad_sum`
  // (shaped and typed like that gradient; updated in place and returned as
  // the first gradient), for a layer that says AddsInputGradient: its
  // products of input 0 add there in their GEMMs, so the caller (a residual
  // connection summing the two paths' gradients) needs no add op. Other
  // layers are never asked.
  virtual bool AddsInputGradient() const { return false; }
  virtual absl::StatusOr<std::vector<Tensor>> BackwardAdding(absl::Span<const Tensor> output_grads,
                                                             const Tensor& input_grad_sum) {
    return absl::UnimplementedError("this layer does not add its input gradient into a sum");
  }
  virtual std::vector<Parameter*> Parameters() { return {}; }
};

// What a layer is built from: the model section of the task config, the
// layer's own attributes, the device its parameters live on, the prefix of
// its parameters' names ("decoder.layers.1.encoder_attn.") and the generator
// its parameters are initialised from (required by layers with parameters;
// the model passes one seeded generator to every layer in build order).
struct LayerArgs {
  config::ModelConfig model;
  Attrs attrs;
  Device device = Device::Cpu();
  std::string scope;
  Generator* init_rng = nullptr;
  // A model built to decode with the values of a checkpoint that fills every
  // parameter right after it is built (tasks/common/trained_model.cc): values
  // are left uninitialised and no gradient buffer is made. The random init
  // would be overwritten at once, and the zero gradients are a second copy of
  // the model that nothing reads (a Transformer-big: 0.85 GB). Safe because
  // the loaders refuse a file that lacks any parameter.
  bool load_for_decoding = false;
};

struct LayerDef {
  std::string name;
  std::string doc;
  std::function<absl::StatusOr<std::unique_ptr<Layer>>(const LayerArgs&)> create;
};

Registry<LayerDef>& LayerRegistry();

// Builds a registered layer; unknown names list the known ones.
absl::StatusOr<std::unique_ptr<Layer>> CreateLayer(absl::string_view name, const LayerArgs& args);

namespace internal {
struct LayerRegistrar {
  explicit LayerRegistrar(LayerDef def);
};
}  // namespace internal

#define TFM_REGISTER_LAYER(...) \
  static ::tfm::internal::LayerRegistrar TFM_UNIQUE_NAME(tfm_layer_registrar_)(__VA_ARGS__)

}  // namespace tfm

#endif  // TFM_CORE_LAYER_REGISTRY_H_
