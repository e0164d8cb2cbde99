// Training commands shared by the sequence-to-sequence tasks (translation,
// parsing): the paper's Transformer from the config's model section, trained
// by core/train's job on the task's corpora.
#ifndef TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_
#define TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_

#include "absl/status/status.h"
#include "core/task_registry.h"

namespace tfm {

// True for the commands RunSeq2SeqTraining serves: train, average, plot.
bool IsTrainingCommand(TaskMode mode);

absl::Status RunSeq2SeqTraining(const TaskContext& context);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_
