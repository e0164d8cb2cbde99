// What a task binary does with no command: the whole path a new user wants
// to see on the embedded default, in one run. Train the config's model for
// a time budget (--minutes, default 10; resuming when the work directory
// holds a checkpoint), average the last checkpoints, decode the held-out
// split (data.test) and score it (translation: BLEU with sacreBLEU's
// signature; parsing: EVALB F1), show examples beside their references, and
// say how to use the saved model.
#ifndef TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_
#define TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/task_registry.h"
#include "runtime/train/training_job.h"
#include "tasks/common/corpus_metric.h"
#include "tasks/common/trained_model.h"

namespace tfm {

// Minutes of training when the command line gives none.
inline constexpr double kMainJobDefaultMinutes = 10;
// Held-out sentences scored at the end (the first ones of data.test): a
// bound on the minutes decoding adds to the run.
inline constexpr int kMainJobTestSentences = 1000;

// The task's part: decoding and scoring the held-out split.
struct HeldOutEvaluation {
  std::string command;        // The decode command's name: "translate", "parse".
  std::string example_input;  // A line to decode in the printed example.
  // Decodes and scores the config's held-out split with `trained`, writing
  // examples and the score line to `log`; returns the arguments of an
  // evaluate command that scores the same ("--src=... --ref=...").
  std::function<absl::StatusOr<std::string>(TrainedModel& trained, const TaskContext& context,
                                            std::ostream& log)>
      run;
};

// Decodes the first kMainJobTestSentences pairs of data.test with the
// checkpoint's decode settings and scores them with `metric`; `command` and
// `example_input` as in HeldOutEvaluation.
HeldOutEvaluation CorpusHeldOut(CorpusMetric metric, std::string command,
                                std::string example_input);

// Translation's: BLEU with sacreBLEU's signature.
HeldOutEvaluation TranslationHeldOut();

// `binary` names the bazel target for the commands printed at the end;
// `make_scorer` is the task's validation score (may be empty), and
// `make_task_files` what its checkpoints keep for decoding (may be empty),
// as the train command takes them (RunSeq2SeqTraining).
absl::Status RunSeq2SeqMainJob(const TaskContext& context, const std::string& binary,
                               const ValidationScorerFactory& make_scorer,
                               const HeldOutEvaluation& held_out,
                               const TaskFilesFactory& make_task_files = nullptr);

}  // namespace tfm

#endif  // TFM_TASKS_COMMON_SEQ2SEQ_MAIN_JOB_H_
