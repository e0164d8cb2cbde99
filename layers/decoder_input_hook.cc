#include "layers/decoder_input_hook.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tfm {

Registry<DecoderInputHookDef>& DecoderInputHookRegistry() {
  static auto* registry = new Registry<DecoderInputHookDef>("decoder input hook");
  return *registry;
}

absl::StatusOr<std::unique_ptr<DecoderInputHook>> CreateDecoderInputHook(
    absl::string_view name, const DecoderInputHookArgs& args) {
  absl::StatusOr<std::shared_ptr<const DecoderInputHookDef>> def =
      DecoderInputHookRegistry().Find(name);
  if (!def.ok()) {
    return absl::Status(def.status().code(),
                        absl::StrCat("model.decoder_input_hook: ", def.status().message()));
  }
  return (*def)->create(args);
}

namespace internal {
DecoderInputHookRegistrar::DecoderInputHookRegistrar(DecoderInputHookDef def) {
  const std::string name = def.name;
  RegisterOrRecordError(DecoderInputHookRegistry(), name, std::move(def));
}
}  // namespace internal

}  // namespace tfm
