#include "plugins/algorithmic/exact_match.h"

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace algorithmic {
namespace {

std::vector<absl::string_view> Symbols(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
}

}  // namespace

tfm::CorpusMetric ExactSequenceAccuracy() {
  tfm::CorpusMetric metric;
  metric.name = kAccuracyName;
  metric.score = [](const std::vector<std::string>& hypotheses,
                    const std::vector<std::string>& references)
      -> absl::StatusOr<tfm::CorpusScore> {
    if (hypotheses.size() != references.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%d outputs for %d references", hypotheses.size(), references.size()));
    }
    if (references.empty()) return absl::InvalidArgumentError("no references to score");
    size_t correct = 0;
    for (size_t i = 0; i < references.size(); ++i) {
      if (Symbols(hypotheses[i]) == Symbols(references[i])) ++correct;
    }
    const double percent = 100.0 * correct / references.size();
    return tfm::CorpusScore{percent,
                            absl::StrFormat("exact-sequence accuracy = %.2f%% (%d/%d)", percent,
                                            correct, references.size())};
  };
  return metric;
}

}  // namespace algorithmic
