// English constituency parsing as translation into linearised trees (paper,
// section 6.3): checks its treebanks, trains, parses with tree-constrained
// search (parse) and scores with EVALB's F1 (evaluate, the main job).
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "tasks/common/seq2seq_main_job.h"
#include "tasks/common/seq2seq_training.h"
#include "tasks/common/validation_bleu.h"
#include "tasks/parsing/parse_evaluation.h"
#include "tasks/parsing/tree_decoding.h"

namespace tfm {
namespace {

class ParsingTask : public Task {
 public:
  absl::Status Validate(const LoadedConfig& loaded) const override {
    const config::DataConfig& data = loaded.config.data();
    if (data.train_size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(loaded.sources.file(), ": data.train: parsing needs a treebank"));
    }
    TFM_RETURN_IF_ERROR(CheckTreebanks(loaded, "data.train", data.train()));
    TFM_RETURN_IF_ERROR(CheckTreebanks(loaded, "data.valid", data.valid()));
    return CheckTreebanks(loaded, "data.test", data.test());
  }

  absl::Status Run(const TaskContext& context) override {
    if (context.mode == TaskMode::kValidate) return Validate(context.config);
    if (context.mode == TaskMode::kRun) {
      TFM_RETURN_IF_ERROR(Validate(context.config));
      return RunSeq2SeqMainJob(context, absl::StrCat("//tasks:", context.program),
                               MakeValidationScorer(LinearizedParseF1()), ParsingHeldOut());
    }
    if (IsTrainingCommand(context.mode)) {
      if (context.mode == TaskMode::kTrain) TFM_RETURN_IF_ERROR(Validate(context.config));
      return RunSeq2SeqTraining(context, MakeValidationScorer(LinearizedParseF1()));
    }
    if (context.mode == TaskMode::kEvaluate) return RunParseEvaluation(context);
    return RunDecodeCommand(context, TreeDecodingHooks());
  }

 private:
  static absl::Status CheckTreebanks(
      const LoadedConfig& loaded, const std::string& name,
      const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora) {
    for (int i = 0; i < corpora.size(); ++i) {
      const std::string field = absl::StrCat(name, "[", i, "]");
      const config::CorpusConfig& corpus = corpora.Get(i);
      if (corpus.format() != config::CorpusConfig::PTB_MRG) {
        return absl::InvalidArgumentError(absl::StrCat(
            loaded.sources.Describe(field), ": ", field, ": parsing reads PTB_MRG treebanks"));
      }
      struct stat info;
      const std::string root = ResolveDataPath(corpus.root());
      if (stat(root.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
        return absl::NotFoundError(absl::StrCat(loaded.sources.Describe(field), ": ", field,
                                                ": treebank directory '", corpus.root(),
                                                "' not found"));
      }
    }
    return absl::OkStatus();
  }
};

TFM_REGISTER_TASK(TaskDef{
    .name = "parsing",
    .doc = "constituency parsing as sequence-to-sequence over linearised trees",
    .create = [] { return std::make_unique<ParsingTask>(); },
});

}  // namespace
}  // namespace tfm
