#include "tasks/common/seq2seq_training.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "runtime/train/training_job.h"
#include "layers/transformer.h"
#include "tasks/common/trained_model.h"

namespace tfm {
namespace {

absl::StatusOr<std::unique_ptr<TrainableModel>> MakeTransformer(const config::TaskConfig& config,
                                                                const Tokenizer& tokenizer) {
  if (config.train().device() != "cpu") {
    return absl::UnimplementedError(absl::StrCat(
        "train.device: ", config.train().device(),
        ": this build trains on the CPU (CUDA training arrives with the CUDA kernels)"));
  }
  TFM_ASSIGN_OR_RETURN(const VocabularySpec vocabulary, ModelVocabulary(config, tokenizer));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Transformer> model,
                       Transformer::Create(config.model(), vocabulary, Device::Cpu(),
                                           config.train().seed()));
  return std::unique_ptr<TrainableModel>(std::move(model));
}

}  // namespace

bool IsTrainingCommand(TaskMode mode) {
  return mode == TaskMode::kTrain || mode == TaskMode::kAverage || mode == TaskMode::kPlot;
}

absl::Status RunSeq2SeqTraining(const TaskContext& context,
                                const ValidationScorerFactory& make_scorer,
                                const TaskFilesFactory& make_task_files) {
  return RunTrainingCommand(context, MakeTransformer, make_scorer, make_task_files);
}

}  // namespace tfm
