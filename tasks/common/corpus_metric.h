// A task's score of decoded lines against their references: what `evaluate`
// prints, what the main job reports on the held-out split and what
// validation tracks during training (train.validate_bleu_sentences lines).
// Translation's is BLEU; a plugin task brings its own (plugins/algorithmic:
// exact-sequence accuracy) and gets the same three paths.
#ifndef TFM_TASKS_COMMON_CORPUS_METRIC_H_
#define TFM_TASKS_COMMON_CORPUS_METRIC_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {

struct CorpusScore {
  double value = 0;    // Higher is better: it ranks checkpoints.
  std::string report;  // The lines printed after decoding ("BLEU = ...").
};

struct CorpusMetric {
  // The log label, the CSV column valid_<name>, TensorBoard's valid/<name>
  // and the value of train.best_checkpoint_metric that chooses it.
  std::string name;
  // `hypotheses[i]` against `references[i]`; as many of each.
  std::function<absl::StatusOr<CorpusScore>(const std::vector<std::string>& hypotheses,
                                            const std::vector<std::string>& references)>
      score;
};

// sacreBLEU-equal corpus BLEU; the report is its line and signature.
CorpusMetric BleuMetric();

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_CORPUS_METRIC_H_
