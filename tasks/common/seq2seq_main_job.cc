#include "tasks/common/seq2seq_main_job.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "runtime/train/checkpoint_directory.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_job.h"
#include "tasks/common/decoding_device.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/seq2seq_training.h"
#include "tasks/common/trained_model.h"

namespace tfm {

HeldOutEvaluation CorpusHeldOut(CorpusMetric metric, std::string command,
                                std::string example_input) {
  HeldOutEvaluation held_out;
  held_out.command = std::move(command);
  held_out.example_input = std::move(example_input);
  held_out.run = [metric = std::move(metric)](TrainedModel& trained, const TaskContext& context,
                                              std::ostream& log) -> absl::StatusOr<std::string> {
    const config::TaskConfig& config = context.config.config;
    if (config.data().test().empty()) {
      return absl::FailedPreconditionError(
          "data.test: the main job scores the held-out split, and the config has none");
    }
    std::vector<std::string> sources, references;
    TFM_RETURN_IF_ERROR(ReadCorpusPairs(config.data().test(), "data.test", kMainJobTestSentences,
                                        &sources, &references));
    TFM_ASSIGN_OR_RETURN(const config::DecodeConfig decode,
                         DecodeSettings(trained.config, DecodeRequest{}));
    log << "\ndecoding " << sources.size() << " held-out sentences (beam " << decode.beam_size()
        << ", alpha " << decode.length_penalty_alpha() << ")\n"
        << std::flush;
    const absl::Time start = absl::Now();
    TFM_ASSIGN_OR_RETURN(std::vector<std::string> hypotheses,
                         DecodeLines(trained, decode, sources, "data.test", &log));
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    TFM_ASSIGN_OR_RETURN(const CorpusScore score, metric.score(hypotheses, references));
    for (size_t i = 0; i < hypotheses.size() && i < 5; ++i) {
      log << "\nsource:     " << sources[i] << "\nreference:  " << references[i]
          << "\ndecoded:    " << hypotheses[i] << "\n";
    }
    log << absl::StrFormat("\n%d sentences decoded in %.1f s\n", hypotheses.size(), seconds);
    log << score.report << "\n";
    return std::string("--src=SRC --ref=REF");
  };
  return held_out;
}

HeldOutEvaluation TranslationHeldOut() {
  return CorpusHeldOut(BleuMetric(), "translate", "Open the file.");
}

absl::Status RunSeq2SeqMainJob(const TaskContext& context, const std::string& binary,
                               const ValidationScorerFactory& make_scorer,
                               const HeldOutEvaluation& held_out,
                               const TaskFilesFactory& make_task_files) {
  std::ostream& log = *context.log;
  const config::TaskConfig& config = context.config.config;
  const double minutes = context.time_limit == absl::InfiniteDuration()
                             ? kMainJobDefaultMinutes
                             : absl::ToDoubleMinutes(context.time_limit);
  log << absl::StrFormat(
      "main job (%s): train for %.0f minutes (--minutes=N to change), average the last "
      "checkpoints, then %s and score up to %d held-out sentences (a few minutes more); work "
      "directory %s\n\n",
      config.name(), minutes, held_out.command, kMainJobTestSentences, context.work_dir);

  TaskContext train = context;
  train.mode = TaskMode::kTrain;
  train.time_limit = absl::Minutes(minutes);
  TFM_RETURN_IF_ERROR(RunSeq2SeqTraining(train, make_scorer, make_task_files));

  TFM_ASSIGN_OR_RETURN(const std::vector<CheckpointEntry> checkpoints,
                       ListCheckpoints(context.work_dir));
  const int average = std::min<int>(config.train().average_last_checkpoints(),
                                    static_cast<int>(checkpoints.size()));
  if (average >= 2) {
    TaskContext averaging = context;
    averaging.mode = TaskMode::kAverage;
    averaging.average_last = average;
    TFM_RETURN_IF_ERROR(RunSeq2SeqTraining(averaging));
  }

  // decode.device, which --device sets with train.device: where it trained.
  TFM_ASSIGN_OR_RETURN(const DecodingTarget target, ChooseDecodingTarget(context, &log));
  TFM_ASSIGN_OR_RETURN(TrainedModel trained,
                       LoadTrainedModel(context.work_dir, target.device, &log));
  TFM_ASSIGN_OR_RETURN(const std::string evaluate_args, held_out.run(trained, context, log));
  TFM_ASSIGN_OR_RETURN(const config::DecodeConfig decode,
                       DecodeSettings(trained.config, DecodeRequest{}));
  const std::string command = absl::StrCat(held_out.command, " --model=", context.work_dir);
  log << "\nthe model is in " << trained.checkpoint_dir << "; use it with:\n"
      << "  echo '" << held_out.example_input << "' | bazel run " << binary << " -- " << command
      << "\n"
      << "  bazel run " << binary << " -- " << command
      << absl::StrFormat(" --input=in.txt --output=out.txt [--beam=%d --alpha=%g --nbest=1]\n",
                         decode.beam_size(), decode.length_penalty_alpha())
      << "  bazel run " << binary << " -- evaluate --model=" << context.work_dir << " "
      << evaluate_args << "\n"
      << "  bazel run " << binary << " -- train --workdir=" << context.work_dir
      << " --minutes=30   # trains on from the last checkpoint\n";
  return absl::OkStatus();
}

}  // namespace tfm
