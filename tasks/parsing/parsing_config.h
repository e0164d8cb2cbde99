// The parsing task's settings (parsing_config.proto) in a task config.
#ifndef TFM_TASKS_PARSING_PARSING_CONFIG_H_
#define TFM_TASKS_PARSING_PARSING_CONFIG_H_

#include "absl/status/statusor.h"
#include "core/config/config_loader.h"
#include "core/config/task_config.pb.h"
#include "tasks/parsing/parsing_config.pb.h"

namespace tfm {

// What a parsing config writes to set its own settings, for messages.
inline constexpr char kParsingConfigExample[] =
    "extensions { [type.googleapis.com/tfm.parsing.ParsingConfig] { "
    "tag_dictionary_min_count: 5 } }";

// `config`'s ParsingConfig, or the defaults when it has none (a parsing
// config needs none). A config that passed CheckParsingConfig has at most one.
parsing::ParsingConfig ParsingSettings(const config::TaskConfig& config);

// `config` with `settings` as its one ParsingConfig.
void SetParsingSettings(const parsing::ParsingConfig& settings, config::TaskConfig* config);

// At most one ParsingConfig, which parses, with a non-negative
// tag_dictionary_min_count. Errors name the file and line.
absl::Status CheckParsingConfig(const LoadedConfig& loaded);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_PARSING_CONFIG_H_
