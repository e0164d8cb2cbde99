// The algorithmic task's metric: exact-sequence accuracy, the share of
// outputs equal to their reference symbol for symbol (tensor2tensor's
// "accuracy_per_sequence"). A plugin metric on the engine's evaluation path
// (tasks/common/corpus_metric.h): evaluate prints its report, validation
// tracks it as valid_accuracy.
#ifndef TFM_PLUGINS_ALGORITHMIC_EXACT_MATCH_H_
#define TFM_PLUGINS_ALGORITHMIC_EXACT_MATCH_H_

#include "tasks/common/corpus_metric.h"

namespace algorithmic {

// Its name, "accuracy": train.best_checkpoint_metric may name it.
inline constexpr char kAccuracyName[] = "accuracy";

// Percent of lines equal to their reference once runs of spaces count as
// one and the ends are trimmed; the report reads
// "exact-sequence accuracy = 99.40% (994/1000)".
tfm::CorpusMetric ExactSequenceAccuracy();

}  // namespace algorithmic

#endif  // TFM_PLUGINS_ALGORITHMIC_EXACT_MATCH_H_
