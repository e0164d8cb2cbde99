// English constituency parsing as translation into linearised trees (paper,
// section 6.3): checks its treebanks, trains, parses with tree-constrained
// search (parse) and scores with EVALB's F1 (evaluate, the main job).
#include <sys/stat.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "tasks/common/corpus_check.h"
#include "tasks/common/seq2seq_main_job.h"
#include "tasks/common/seq2seq_training.h"
#include "tasks/common/validation_bleu.h"
#include "tasks/parsing/parse_evaluation.h"
#include "tasks/parsing/parsing_config.h"
#include "tasks/parsing/parsing_flags.h"
#include "tasks/parsing/ptb_corpus.h"
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
    TFM_RETURN_IF_ERROR(CheckTreebanks(loaded, "data.test", data.test()));
    TFM_RETURN_IF_ERROR(CheckParsingConfig(loaded));
    // The tree constraint and the leaf alignment read the target's pieces
    // as the vocabulary splits them; BPE-dropout would train on others.
    if (data.tokenizer().bpe_dropout() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          loaded.sources.Describe("data.tokenizer.bpe_dropout"),
          ": data.tokenizer.bpe_dropout: parsing trains on linearized trees, whose pieces the "
          "tree constraint and the leaf alignment read as the vocabulary splits them; leave "
          "it at 0"));
    }
    return CheckLeafStyles(loaded);
  }

  absl::Status Run(const TaskContext& context) override {
    if (context.mode == TaskMode::kValidate) {
      TFM_RETURN_IF_ERROR(Validate(context.config));
      return ReportTreebanks(context);
    }
    if (context.mode == TaskMode::kRun) {
      TFM_RETURN_IF_ERROR(Validate(context.config));
      TFM_RETURN_IF_ERROR(ReportTreebanks(context));
      return RunSeq2SeqMainJob(context, absl::StrCat("//tasks:", context.program),
                               ValidationF1(context.config.config), ParsingHeldOut(),
                               ParsingTaskFiles);
    }
    if (IsTrainingCommand(context.mode)) {
      if (context.mode == TaskMode::kTrain) {
        TFM_RETURN_IF_ERROR(Validate(context.config));
        TFM_RETURN_IF_ERROR(ReportTreebanks(context));
      }
      return RunSeq2SeqTraining(context, ValidationF1(context.config.config), ParsingTaskFiles);
    }
    if (context.mode == TaskMode::kEvaluate) return RunParseEvaluation(context);
    TFM_ASSIGN_OR_RETURN(const ParsingFlags flags, ReadParsingFlags(context.task_flags));
    return RunDecodeCommand(context, TreeDecodingHooks(flags));
  }

 private:
  // Each treebank's documents, as the check before a run finds them (with a
  // warning where an explicit document range is not all there), on the log.
  static absl::Status ReportTreebanks(const TaskContext& context) {
    if (context.log == nullptr) return absl::OkStatus();
    const config::DataConfig& data = context.config.config.data();
    for (const auto& [name, corpora] :
         {std::pair<const char*, const google::protobuf::RepeatedPtrField<config::CorpusConfig>*>{
              "data.train", &data.train()},
          {"data.valid", &data.valid()},
          {"data.test", &data.test()}}) {
      for (int i = 0; i < corpora->size(); ++i) {
        TFM_RETURN_IF_ERROR(CheckCorpusAt(context.config, absl::StrCat(name, "[", i, "]"),
                                          corpora->Get(i), context.log));
      }
    }
    return absl::OkStatus();
  }

  // EVALB F1 of greedy, tree-constrained parses of the validation trees,
  // read in the config's leaf style.
  static ValidationScorerFactory ValidationF1(const config::TaskConfig& config) {
    DecodingHooks hooks = TreeDecodingHooks();
    hooks.format = nullptr;  // The metric reads linearised trees.
    return MakeValidationScorer(LinearizedParseF1(ConfigLeafStyle(config)), std::move(hooks));
  }

  // One leaf style for every treebank: the model is trained and decodes in
  // one.
  static absl::Status CheckLeafStyles(const LoadedConfig& loaded) {
    const config::DataConfig& data = loaded.config.data();
    const auto style = data.train(0).tree_leaves();
    for (const auto* corpora : {&data.train(), &data.valid(), &data.test()}) {
      const std::string name = corpora == &data.train()   ? "data.train"
                               : corpora == &data.valid() ? "data.valid"
                                                          : "data.test";
      for (int i = 0; i < corpora->size(); ++i) {
        if (corpora->Get(i).tree_leaves() == style) continue;
        const std::string field = absl::StrCat(name, "[", i, "].tree_leaves");
        return absl::InvalidArgumentError(absl::StrCat(
            loaded.sources.Describe(field), ": ", field, ": ",
            config::CorpusConfig::TreeLeaves_Name(corpora->Get(i).tree_leaves()),
            ", but data.train[0] has ", config::CorpusConfig::TreeLeaves_Name(style),
            " (every treebank of a config writes its leaves alike)"));
      }
    }
    if (ParsingSettings(loaded.config).tag_dictionary_min_count() > 0 &&
        style != config::CorpusConfig::POS_TAGS) {
      return absl::InvalidArgumentError(absl::StrCat(
          loaded.sources.file(), ": ParsingConfig.tag_dictionary_min_count",
          ": a tag dictionary is for trees whose leaves are tags (tree_leaves: POS_TAGS), and "
          "data.train[0] has ", config::CorpusConfig::TreeLeaves_Name(style)));
    }
    return absl::OkStatus();
  }

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
      if (corpus.subtree_min_words() < 0 ||
          (corpus.subtree_min_words() > 0 && name != "data.train")) {
        const std::string subtree_field = absl::StrCat(field, ".subtree_min_words");
        return absl::InvalidArgumentError(absl::StrCat(
            loaded.sources.Describe(subtree_field), ": ", subtree_field, ": ",
            corpus.subtree_min_words(),
            corpus.subtree_min_words() < 0
                ? " is negative (0 reads whole trees only)"
                : ": subtrees are for training; validation and tests score whole sentences"));
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
    .flags = ParsingFlagDefinitions(),
    .ensemble_mismatch = [](const config::TaskConfig& first,
                            const config::TaskConfig& member) -> std::string {
      if (ConfigLeafStyle(member) == ConfigLeafStyle(first)) return "";
      return "its trees have other leaves (data.train tree_leaves)";
    },
});

}  // namespace
}  // namespace tfm
