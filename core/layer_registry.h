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
#include "core/tensor.h"

namespace tfm {

// A trainable tensor and its gradient, owned by a layer.
struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;
};

class Layer {
 public:
  virtual ~Layer() = default;
  // Computes outputs and keeps exactly what Backward needs.
  virtual absl::StatusOr<std::vector<Tensor>> Forward(absl::Span<const Tensor> inputs) = 0;
  // Given d(loss)/d(outputs), accumulates parameter gradients and returns
  // d(loss)/d(inputs).
  virtual absl::StatusOr<std::vector<Tensor>> Backward(
      absl::Span<const Tensor> output_grads) = 0;
  virtual std::vector<Parameter*> Parameters() { return {}; }
};

// What a layer is built from: the model section of the task config, the
// layer's own attributes, and the device its parameters live on.
struct LayerArgs {
  config::ModelConfig model;
  Attrs attrs;
  Device device = Device::Cpu();
};

struct LayerDef {
  std::string name;
  std::string doc;
  std::function<absl::StatusOr<std::unique_ptr<Layer>>(const LayerArgs&)> create;
};

Registry<LayerDef>& LayerRegistry();

// Builds a registered layer; unknown names list the known ones.
absl::StatusOr<std::unique_ptr<Layer>> CreateLayer(absl::string_view name,
                                                   const LayerArgs& args);

namespace internal {
struct LayerRegistrar {
  explicit LayerRegistrar(LayerDef def);
};
}  // namespace internal

#define TFM_REGISTER_LAYER(...)                              \
  static ::tfm::internal::LayerRegistrar TFM_UNIQUE_NAME(    \
      tfm_layer_registrar_)(__VA_ARGS__)

}  // namespace tfm

#endif  // TFM_CORE_LAYER_REGISTRY_H_
