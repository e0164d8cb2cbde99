#include "tasks/common/corpus_check.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/data/corpus.h"

namespace tfm {

absl::Status CheckCorpusAt(const LoadedConfig& loaded, const std::string& field,
                           const config::CorpusConfig& corpus, std::ostream* log,
                           absl::string_view not_found_hint) {
  absl::StatusOr<std::string> found = CheckCorpusPresent(corpus);
  if (!found.ok()) {
    return absl::Status(
        found.status().code(),
        absl::StrCat(loaded.sources.Describe(field), ": ", field, ": ", found.status().message(),
                     absl::IsNotFound(found.status()) ? not_found_hint : ""));
  }
  if (log) *log << field << ": " << *found << "\n";
  return absl::OkStatus();
}

}  // namespace tfm
