#include "tasks/common/seq2seq_training.h"

#include <memory>

#include "core/config/device_setting.h"
#include "core/status_macros.h"
#include "runtime/train/training_job.h"
#include "layers/transformer.h"
#include "tasks/common/trained_model.h"

namespace tfm {
namespace {

// On train.device: the training job has resolved "auto" to the device it
// chose and checked that it is here.
absl::StatusOr<std::unique_ptr<TrainableModel>> MakeTransformer(const config::TaskConfig& config,
                                                                const Tokenizer& tokenizer) {
  TFM_ASSIGN_OR_RETURN(const Device device, ResolveDevice(config.train().device()));
  TFM_ASSIGN_OR_RETURN(const VocabularySpec vocabulary, ModelVocabulary(config, tokenizer));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> model,
                       Transformer::Create(config.model(), vocabulary, device, config.train().seed()));
  return std::unique_ptr<TrainableModel>(std::move(model));
}

}  // namespace

bool IsTrainingCommand(TaskMode mode) {
  return mode == TaskMode::kTrain || mode == TaskMode::kPreprocess || mode == TaskMode::kAverage ||
         mode == TaskMode::kPlot;
}

absl::Status RunSeq2SeqTraining(const TaskContext& context,
                                const ValidationScorerFactory& make_scorer,
                                const TaskFilesFactory& make_task_files) {
  return RunTrainingCommand(context, MakeTransformer, make_scorer, make_task_files);
}

}  // namespace tfm
