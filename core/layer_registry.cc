#include "core/layer_registry.h"

#include "core/status_macros.h"

namespace tfm {

Registry<LayerDef>& LayerRegistry() {
  static auto* registry = new Registry<LayerDef>("layer");
  return *registry;
}

absl::StatusOr<std::unique_ptr<Layer>> CreateLayer(absl::string_view name,
                                                   const LayerArgs& args) {
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const LayerDef> def, LayerRegistry().Find(name));
  return def->create(args);
}

namespace internal {
LayerRegistrar::LayerRegistrar(LayerDef def) {
  const std::string name = def.name;
  RegisterOrRecordError(LayerRegistry(), name, std::move(def));
}
}  // namespace internal

}  // namespace tfm
