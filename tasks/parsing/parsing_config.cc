#include "tasks/parsing/parsing_config.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/config_extensions.h"
#include "core/status_macros.h"

namespace tfm {

parsing::ParsingConfig ParsingSettings(const config::TaskConfig& config) {
  parsing::ParsingConfig settings;
  for (const google::protobuf::Any& extension : config.extensions()) {
    if (extension.UnpackTo(&settings)) return settings;
  }
  return parsing::ParsingConfig();
}

void SetParsingSettings(const parsing::ParsingConfig& settings, config::TaskConfig* config) {
  auto* extensions = config->mutable_extensions();
  for (google::protobuf::Any& extension : *extensions) {
    if (extension.Is<parsing::ParsingConfig>()) {
      extension.PackFrom(settings);
      return;
    }
  }
  extensions->Add()->PackFrom(settings);
}

absl::Status CheckParsingConfig(const LoadedConfig& loaded) {
  bool present = false;
  for (const google::protobuf::Any& extension : loaded.config.extensions()) {
    present = present || extension.Is<parsing::ParsingConfig>();
  }
  if (!present) return absl::OkStatus();  // Every setting at its default.
  parsing::ParsingConfig settings;
  TFM_ASSIGN_OR_RETURN(const std::string where,
                       ReadConfigExtension(loaded, kParsingConfigExample, &settings));
  if (settings.tag_dictionary_min_count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": tag_dictionary_min_count: ", settings.tag_dictionary_min_count(),
                     " is negative (0 turns the tag dictionary off)"));
  }
  return absl::OkStatus();
}

}  // namespace tfm
