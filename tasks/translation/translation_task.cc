// The translation task (EN-DE, EN-FR): checks that its corpora are there and
// its settings make sense, trains (train, average, plot), translates
// (decode) and scores (evaluate, BLEU).
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "tasks/common/corpus_check.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/seq2seq_main_job.h"
#include "tasks/common/seq2seq_training.h"
#include "tasks/common/validation_bleu.h"

namespace tfm {
namespace {

class TranslationTask : public Task {
 public:
  absl::Status Validate(const LoadedConfig& loaded) const override {
    return CheckData(loaded, nullptr);
  }

  absl::Status Run(const TaskContext& context) override {
    if (context.mode == TaskMode::kValidate) return CheckData(context.config, context.log);
    if (context.mode == TaskMode::kRun) {
      TFM_RETURN_IF_ERROR(CheckData(context.config, context.log));
      return RunSeq2SeqMainJob(context, absl::StrCat("//tasks:", context.program),
                               MakeValidationBleu, TranslationHeldOut());
    }
    if (IsTrainingCommand(context.mode)) {
      if (context.mode == TaskMode::kTrain) TFM_RETURN_IF_ERROR(CheckData(context.config, nullptr));
      return RunSeq2SeqTraining(context, MakeValidationBleu);
    }
    return RunSeq2SeqDecoding(context);
  }

 private:
  absl::Status CheckData(const LoadedConfig& loaded, std::ostream* log) const {
    const config::DataConfig& data = loaded.config.data();
    if (data.train_size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(loaded.sources.file(), ": data.train: translation needs a corpus"));
    }
    for (int i = 0; i < data.train_size(); ++i) {
      const config::CorpusConfig& corpus = data.train(i);
      // The download hint only where the missing file is WMT's.
      const bool wmt = corpus.format() == config::CorpusConfig::WMT_SGML ||
                       absl::StrContains(absl::AsciiStrToLower(corpus.source_path()), "wmt");
      TFM_RETURN_IF_ERROR(CheckCorpusAt(loaded, absl::StrCat("data.train[", i, "]"), corpus, log,
                                        wmt ? " (WMT14 data comes from tools/prepare_wmt14.sh)"
                                            : ""));
    }
    return CheckBestMetric(loaded);
  }

  // Caught when the config loads, not after the tokenizer has trained.
  static absl::Status CheckBestMetric(const LoadedConfig& loaded) {
    const config::TaskConfig& config = loaded.config;
    const std::string& metric = config.train().best_checkpoint_metric();
    const std::string field = "train.best_checkpoint_metric";
    const std::string where = absl::StrCat(loaded.sources.Describe(field), ": ", field, ": ");
    if (metric != "auto" && metric != "loss" && metric != kValidationBleuName) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "\"", metric, "\" is not one of auto, loss, ", kValidationBleuName));
    }
    if (metric == kValidationBleuName &&
        (config.train().validate_bleu_sentences() <= 0 || config.data().valid().empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, kValidationBleuName,
                       " needs train.validate_bleu_sentences > 0 and a data.valid corpus"));
    }
    return absl::OkStatus();
  }
};

TFM_REGISTER_TASK(TaskDef{
    .name = "translation",
    .doc = "sequence-to-sequence translation (WMT14 EN-DE / EN-FR, gettext catalogs)",
    .create = [] { return std::make_unique<TranslationTask>(); },
});

}  // namespace
}  // namespace tfm
