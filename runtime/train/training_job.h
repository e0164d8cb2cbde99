// The `train`, `average` and `plot` commands of every sequence-to-sequence
// task: everything between a resolved config and the Trainer loop. A task
// supplies only how to build its model.
//
// train: in the work directory, resumes from the newest checkpoint when there
// is one (after checking that the run's model and tokenizer settings and the
// vocabulary match it), else trains the tokenizer (once) and starts afresh.
// Logs go to the console (a live bar on terminals), metrics.csv and
// TensorBoard files under tensorboard/; checkpoints are written atomically,
// the best by train.best_checkpoint_metric (the validation loss or the
// task's validation score) also as checkpoint_best, the last K kept.
#ifndef TFM_RUNTIME_TRAIN_TRAINING_JOB_H_
#define TFM_RUNTIME_TRAIN_TRAINING_JOB_H_

#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/data/tokenizer.h"
#include "core/task_registry.h"
#include "runtime/train/task_files.h"
#include "runtime/train/trainer.h"
#include "core/trainable_model.h"

namespace tfm {

// The model for `config` over `tokenizer`'s vocabulary (its size, special
// ids and, for some models, its pieces).
using ModelFactory = std::function<absl::StatusOr<std::unique_ptr<TrainableModel>>(
    const config::TaskConfig& config, const Tokenizer& tokenizer)>;

// A task's validation score for `model`, the model being trained (made by
// the task's ModelFactory), with `tokenizer`; both outlive the scorer. A
// scorer without a score function means none (the task's setting turns it
// off). Translation's is BLEU (tasks/common/validation_bleu.h).
using ValidationScorerFactory = std::function<absl::StatusOr<ValidationScorer>(
    const config::TaskConfig& config, TrainableModel& model, const Tokenizer& tokenizer)>;

// The files a task keeps in every checkpoint for decoding (checkpoint.h's
// TaskFiles), made once from the run's config when training starts.
using TaskFilesFactory = std::function<absl::StatusOr<TaskFiles>(const config::TaskConfig& config)>;

// Files of a work directory.
inline constexpr char kMetricsCsv[] = "metrics.csv";
inline constexpr char kMetricsSvg[] = "metrics.svg";
inline constexpr char kTensorBoardDir[] = "tensorboard";
inline constexpr char kBestCheckpoint[] = "checkpoint_best";
// What `average --last=N` and `average --best=N` write (RunAveraging).
inline constexpr char kAverageCheckpoint[] = "checkpoint_average";
inline constexpr char kAverageBestCheckpoint[] = "checkpoint_average_best";

// `make_scorer` may be empty: no validation score; `make_task_files` may
// be empty: no task files.
absl::Status RunTraining(const TaskContext& context, const ModelFactory& make_model,
                         const ValidationScorerFactory& make_scorer = nullptr,
                         const TaskFilesFactory& make_task_files = nullptr);

// Averages the last N checkpoints (context.average_last, else
// train.average_last_checkpoints) into <work_dir>/checkpoint_average; with
// context.average_best = N, the N whose validation ranked best
// (BestCheckpoints) into <work_dir>/checkpoint_average_best.
absl::Status RunAveraging(const TaskContext& context);

// Writes <work_dir>/metrics.svg from <work_dir>/metrics.csv.
absl::Status RunPlot(const TaskContext& context);

// Dispatches train/preprocess/average/plot; other modes are the task's own.
absl::Status RunTrainingCommand(const TaskContext& context, const ModelFactory& make_model,
                                const ValidationScorerFactory& make_scorer = nullptr,
                                const TaskFilesFactory& make_task_files = nullptr);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TRAINING_JOB_H_
