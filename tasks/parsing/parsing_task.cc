// English constituency parsing as translation into linearised trees (paper,
// section 6.3): checks its treebank and settings.
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "tasks/common/seq2seq_training.h"

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
    for (int i = 0; i < data.train_size(); ++i) {
      const std::string field = absl::StrCat("data.train[", i, "]");
      const config::CorpusConfig& corpus = data.train(i);
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

  absl::Status Run(const TaskContext& context) override {
    if (context.mode == TaskMode::kValidate) return Validate(context.config);
    if (context.mode == TaskMode::kRun) {
      // Training runs here; decoding trees (well-formed over the input words)
      // and F1 do not yet, so the main job stops at validation and says so.
      TFM_RETURN_IF_ERROR(Validate(context.config));
      if (context.log) {
        *context.log << "parsing: config valid; `train` trains it. Tree decoding and F1 (the "
                        "rest of this task's main job) are not in this build yet.\n";
      }
      return absl::OkStatus();
    }
    if (IsTrainingCommand(context.mode)) {
      if (context.mode == TaskMode::kTrain) TFM_RETURN_IF_ERROR(Validate(context.config));
      return RunSeq2SeqTraining(context);
    }
    return absl::UnimplementedError(
        "parsing: decode and evaluate need tree-constrained decoding, not in this build yet");
  }
};

TFM_REGISTER_TASK(TaskDef{
    .name = "parsing",
    .doc = "constituency parsing as sequence-to-sequence over linearised trees",
    .create = [] { return std::make_unique<ParsingTask>(); },
});

}  // namespace
}  // namespace tfm
