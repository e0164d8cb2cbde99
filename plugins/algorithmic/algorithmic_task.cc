// The algorithmic task (reverse, sort, add over digit sequences), a plugin:
// built as a shared library against the public headers only
// (//core:plugin_api, //tasks:task_api) and loaded with --plugin=. It
// brings its data (generated from its seed), its settings (an
// AlgorithmicConfig in the config's `extensions`) and its metric
// (exact-sequence accuracy); the engine trains, decodes and evaluates it
// with the code it uses for translation.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/data/file_io.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "plugins/algorithmic/algorithmic_config.h"
#include "plugins/algorithmic/exact_match.h"
#include "plugins/algorithmic/problems.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/seq2seq_training.h"
#include "tasks/common/validation_bleu.h"

namespace algorithmic {
namespace {

using ::tfm::LoadedConfig;
using ::tfm::TaskContext;
using ::tfm::TaskMode;
using ::tfm::config::CorpusConfig;

// The data section the task fills in; a preset must leave it to the task.
absl::Status CheckNoCorpora(const LoadedConfig& loaded) {
  const tfm::config::DataConfig& data = loaded.config.data();
  for (const auto& [field, count] :
       {std::pair<const char*, int>{"data.train", data.train_size()},
        {"data.valid", data.valid_size()},
        {"data.test", data.test_size()}}) {
    if (count > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          loaded.sources.Describe(absl::StrCat(field, "[0]")), ": ", field,
          ": the algorithmic task generates its data from its extension's seed; remove it"));
    }
  }
  return absl::OkStatus();
}

CorpusConfig Corpus(const std::string& dir, const std::string& split) {
  CorpusConfig corpus;
  corpus.set_name(split);
  corpus.set_format(CorpusConfig::PLAIN_TEXT);
  corpus.set_source_path(absl::StrCat(dir, "/", split, ".src"));
  corpus.set_target_path(absl::StrCat(dir, "/", split, ".tgt"));
  return corpus;
}

// Writes the generated splits under WORK_DIR/data (atomically; the same
// lines on every run) and returns the config that reads them: the one the
// training job runs and saves in every checkpoint, so that translate and
// evaluate need nothing else.
absl::StatusOr<TaskContext> WithGeneratedData(const TaskContext& context,
                                              const AlgorithmicConfig& settings) {
  const std::string dir = absl::StrCat(context.work_dir, "/data");
  TFM_RETURN_IF_ERROR(tfm::MakeDirectories(dir));
  const Splits splits = GenerateSplits(settings);
  for (const auto& [name, examples] : {std::pair<const char*, const Examples*>{"train", &splits.train},
                                      {"valid", &splits.valid},
                                      {"test", &splits.test}}) {
    const CorpusConfig corpus = Corpus(dir, name);
    TFM_RETURN_IF_ERROR(tfm::WriteOutputLines(corpus.source_path(), examples->sources));
    TFM_RETURN_IF_ERROR(tfm::WriteOutputLines(corpus.target_path(), examples->targets));
  }
  TaskContext resolved = context;
  tfm::config::DataConfig* data = resolved.config.config.mutable_data();
  *data->add_train() = Corpus(dir, "train");
  *data->add_valid() = Corpus(dir, "valid");
  *data->add_test() = Corpus(dir, "test");
  tfm::config::TokenizerConfig* tokenizer = data->mutable_tokenizer();
  tokenizer->set_model_type(tfm::config::TokenizerConfig::BPE);
  tokenizer->set_vocab_size(VocabularySize(settings));
  tokenizer->set_character_coverage(1.0);
  if (context.log) {
    *context.log << "algorithmic: " << AlgorithmicConfig::Problem_Name(settings.problem())
                 << ", " << splits.train.sources.size() << " training, "
                 << splits.valid.sources.size() << " validation and "
                 << splits.test.sources.size() << " test examples in " << dir
                 << "; evaluate with --src=" << dir << "/test.src --ref=" << dir
                 << "/test.tgt\n";
  }
  return resolved;
}

class AlgorithmicTask : public tfm::Task {
 public:
  absl::Status Validate(const LoadedConfig& loaded) const override {
    TFM_RETURN_IF_ERROR(ReadAlgorithmicConfig(loaded).status());
    return CheckNoCorpora(loaded);
  }

  absl::Status Run(const TaskContext& context) override {
    TFM_ASSIGN_OR_RETURN(const AlgorithmicConfig settings, ReadAlgorithmicConfig(context.config));
    TFM_RETURN_IF_ERROR(CheckNoCorpora(context.config));
    switch (context.mode) {
      case TaskMode::kValidate:
        if (context.log) *context.log << "algorithmic settings:\n" << settings.DebugString();
        return absl::OkStatus();
      case TaskMode::kTrain: {
        TFM_ASSIGN_OR_RETURN(const TaskContext resolved, WithGeneratedData(context, settings));
        return tfm::RunSeq2SeqTraining(resolved,
                                       tfm::MakeValidationScorer(ExactSequenceAccuracy()));
      }
      case TaskMode::kAverage:
      case TaskMode::kPlot:
        return tfm::RunSeq2SeqTraining(context);
      case TaskMode::kDecode:
        return tfm::RunDecodeCommand(context, tfm::DecodingHooks{});
      case TaskMode::kEvaluate:
        return tfm::RunEvaluateCommand(context, ExactSequenceAccuracy());
      default:
        return absl::UnimplementedError(
            "the algorithmic task has no main job: run train, then translate or evaluate "
            "(plugins/README.md)");
    }
  }
};

TFM_REGISTER_TASK(tfm::TaskDef{
    .name = "algorithmic",
    .doc = "reverse, sort or add digit sequences (a plugin task; plugins/algorithmic)",
    .create = [] { return std::make_unique<AlgorithmicTask>(); },
});

}  // namespace
}  // namespace algorithmic
