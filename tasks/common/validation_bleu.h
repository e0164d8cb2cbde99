// Validation BLEU during training (translation): at each validation the
// model being trained translates the first train.validate_bleu_sentences of
// data.valid with greedy search and is scored against their raw references
// with the engine's sacreBLEU-equal BLEU. Greedy, because a validation
// ranks checkpoints rather than reports a final score, and it costs a
// beam's fraction of the time; the final score (evaluate, the main job)
// uses the config's decode section.
#ifndef TFM_TASKS_COMMON_VALIDATION_BLEU_H_
#define TFM_TASKS_COMMON_VALIDATION_BLEU_H_

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/tokenizer.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_job.h"
#include "core/trainable_model.h"
#include "tasks/common/corpus_metric.h"
#include "tasks/common/seq2seq_decoding.h"

namespace tfm {

// The score's name: the log label, the CSV column valid_bleu, TensorBoard's
// valid/bleu and the value of train.best_checkpoint_metric.
inline constexpr char kValidationBleuName[] = "bleu";

// A runtime/train/training_job.h ValidationScorerFactory. `model` must also be
// an IncrementalModel (the Transformer is); it and `tokenizer` must outlive
// the scorer. The scorer has no score function when
// train.validate_bleu_sentences is 0 or data.valid has no sentences.
// Scoring decodes without dropout and touches nothing the trainer keeps, so
// a run with it trains exactly as one without it.
absl::StatusOr<ValidationScorer> MakeValidationBleu(const config::TaskConfig& config,
                                                    TrainableModel& model,
                                                    const Tokenizer& tokenizer);

// The same with any task's metric (the scorer takes the metric's name):
// the first train.validate_bleu_sentences of data.valid, decoded greedily
// with the task's `hooks` (parsing: its tree constraint).
ValidationScorerFactory MakeValidationScorer(CorpusMetric metric, DecodingHooks hooks = {});

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_VALIDATION_BLEU_H_
