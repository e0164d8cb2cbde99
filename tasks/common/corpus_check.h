// The check before a run that a config's corpus is there (CheckCorpusPresent,
// by its format): what was found goes to the log, and an error names the
// config line or --set that gave the corpus. Every task's validate, train
// and main job check their corpora through it.
#ifndef TFM_TASKS_COMMON_CORPUS_CHECK_H_
#define TFM_TASKS_COMMON_CORPUS_CHECK_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/config/config_loader.h"

namespace tfm {

// `field` is the corpus's place in the config ("data.train[0]"); `log` may
// be null. `not_found_hint` is appended to a NotFound error (where the
// missing data comes from).
absl::Status CheckCorpusAt(const LoadedConfig& loaded, const std::string& field,
                           const config::CorpusConfig& corpus, std::ostream* log,
                           absl::string_view not_found_hint = {});

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_CORPUS_CHECK_H_
