// English constituency parsing as translation into linearised trees (paper,
// section 6.3): checks its treebank and settings.
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/task_registry.h"

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
    return absl::UnimplementedError(
        "parsing: this build can validate configs only; training and decoding "
        "arrive with core/train and core/decode");
  }
};

TFM_REGISTER_TASK(TaskDef{
    .name = "parsing",
    .doc = "constituency parsing as sequence-to-sequence over linearised trees",
    .create = [] { return std::make_unique<ParsingTask>(); },
});

}  // namespace
}  // namespace tfm
