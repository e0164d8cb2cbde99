#include "tasks/common/corpus_metric.h"

#include "absl/strings/str_cat.h"
#include "core/metrics/bleu.h"
#include "core/status_macros.h"

namespace tfm {

CorpusMetric BleuMetric() {
  CorpusMetric metric;
  metric.name = "bleu";
  metric.score = [](const std::vector<std::string>& hypotheses,
                    const std::vector<std::string>& references) -> absl::StatusOr<CorpusScore> {
    TFM_ASSIGN_OR_RETURN(const BleuScore bleu, CorpusBleu(hypotheses, {references}));
    return CorpusScore{bleu.score, absl::StrCat(bleu.Format(), "\n", BleuSignature(1))};
  };
  return metric;
}

}  // namespace tfm
