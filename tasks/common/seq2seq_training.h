// Training commands shared by the sequence-to-sequence tasks (translation,
// parsing): the paper's Transformer from the config's model section, trained
// by runtime/train's job on the task's corpora.
#ifndef TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_
#define TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_

#include "absl/status/status.h"
#include "core/task_registry.h"
#include "runtime/train/training_job.h"

namespace tfm {

// True for the commands RunSeq2SeqTraining serves: train, preprocess, average, plot.
bool IsTrainingCommand(TaskMode mode);

// `make_scorer`: the task's validation score (translation: validation BLEU,
// tasks/common/validation_bleu.h); may be empty. `make_task_files`: what
// the task keeps in its checkpoints for decoding (parsing: its tag
// dictionary); may be empty.
absl::Status RunSeq2SeqTraining(const TaskContext& context,
                                const ValidationScorerFactory& make_scorer = nullptr,
                                const TaskFilesFactory& make_task_files = nullptr);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SEQ2SEQ_TRAINING_H_
