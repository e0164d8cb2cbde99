// What a task binary does with no command: the whole path a new user wants
// to see on the embedded default, in one run. Train the config's model for
// a time budget (--minutes, default 10; resuming when the work directory
// holds a checkpoint), average the last checkpoints, translate the held-out
// split (data.test) and score it (BLEU with sacreBLEU's signature), show
// examples beside their references, and say how to use the saved model.
#ifndef TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_
#define TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_

#include "absl/status/status.h"
#include "core/task_registry.h"
#include "core/train/training_job.h"

namespace tfm {

// Minutes of training when the command line gives none.
inline constexpr double kMainJobDefaultMinutes = 10;
// Held-out sentences scored at the end (the first ones of data.test): a
// bound on the minutes decoding adds to the run.
inline constexpr int kMainJobTestSentences = 1000;

// `binary` names the bazel target for the commands printed at the end;
// `make_scorer` is the task's validation score (may be empty).
absl::Status RunSeq2SeqMainJob(const TaskContext& context, const std::string& binary,
                               const ValidationScorerFactory& make_scorer);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_
