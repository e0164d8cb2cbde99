#include "tasks/parsing/tree_decoding.h"

#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/ptb_corpus.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/tree_constraint.h"
#include "core/status_macros.h"
#include "tasks/parsing/parsing_config.h"
#include "tasks/parsing/tag_dictionary.h"

namespace tfm {

std::vector<std::string> InputWords(const std::string& line) {
  std::vector<std::string> words = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  for (std::string& word : words) {
    word = absl::StrReplaceAll(word, {{"(", "-LRB-"}, {")", "-RRB-"}});
  }
  return words;
}

std::string TreeLine(const std::string& line, const std::string& linearised, LeafStyle style) {
  const std::vector<std::string> tokens =
      absl::StrSplit(linearised, ' ', absl::SkipEmpty());
  return FormatTree(Delinearize(tokens, InputWords(line), nullptr, style));
}

absl::StatusOr<std::unique_ptr<DecodingConstraint>> MakeTreeConstraint(const Tokenizer& tokenizer,
                                                                       LeafStyle style,
                                                                       LeafTagDictionary tags) {
  std::vector<std::string> pieces(tokenizer.vocab_size());
  for (int id = 0; id < tokenizer.vocab_size(); ++id) pieces[id] = tokenizer.IdToPiece(id);
  LeafRule leaves;
  leaves.leaf_starts_by_word = std::move(tags.leaf_starts_by_word);
  leaves.unlisted_leaf_starts = std::move(tags.unlisted_leaf_starts);
  if (style == LeafStyle::kWord) leaves.kind = LeafRule::kSourceWords;
  if (style == LeafStyle::kIndexed) {
    // Sources hold at most max_length pieces, so fewer words than this.
    constexpr int kMaxLeaves = 1024;
    leaves.kind = LeafRule::kSpelled;
    for (int i = 0; i < kMaxLeaves; ++i) leaves.spellings.push_back(tokenizer.Encode(IndexedLeaf(i)));
  }
  TFM_ASSIGN_OR_RETURN(
      std::unique_ptr<TreeConstraint> constraint,
      TreeConstraint::Create(pieces, tokenizer.eos_id(),
                             {tokenizer.pad_id(), tokenizer.unk_id(), tokenizer.bos_id()},
                             std::move(leaves)));
  return std::unique_ptr<DecodingConstraint>(std::move(constraint));
}

namespace {

// The words of the lines to decode (the dictionary lists those never seen
// in training by their shape).
std::set<std::string> WordsOf(const std::vector<std::string>& lines) {
  std::set<std::string> words;
  for (const std::string& line : lines) {
    for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      words.emplace(word);
    }
  }
  return words;
}

}  // namespace

absl::StatusOr<TaskFiles> ParsingTaskFiles(const config::TaskConfig& config) {
  if (ConfigLeafStyle(config) != LeafStyle::kPosTag) return TaskFiles{};
  TFM_ASSIGN_OR_RETURN(const TagCounts counts, ReadTagCounts(config.data().train()));
  return TaskFiles{{kTagCountsFile, FormatTagCounts(counts)}};
}

DecodingHooks TreeDecodingHooks(const ParsingFlags& flags) {
  DecodingHooks hooks;
  hooks.prepare = [](const std::string& line) { return absl::StrJoin(InputWords(line), " "); };
  // The training treebank's tags, read once (validation makes a constraint
  // at every validation).
  auto tag_counts = std::make_shared<std::optional<TagCounts>>();
  hooks.constraint = [tag_counts, flags](const config::TaskConfig& config,
                                         const Tokenizer& tokenizer,
                                  const std::vector<std::string>& inputs,
                                  const TaskFiles& model_files)
      -> absl::StatusOr<std::unique_ptr<DecodingConstraint>> {
    const LeafStyle style = ConfigLeafStyle(config);
    parsing::ParsingConfig settings = ParsingSettings(config);
    flags.ApplyTo(&settings);
    // Beam search only: greedy search under the dictionary has no second
    // path when a word's tag does not fit the brackets it opened (the
    // 10-minute preset model's validation F1: 37.66 with it, 61.76 without).
    const int min_count = config.decode().strategy() == config::DecodeConfig::GREEDY
                              ? 0
                              : settings.tag_dictionary_min_count();
    if (style != LeafStyle::kPosTag || min_count <= 0) return MakeTreeConstraint(tokenizer, style);
    // The checkpoint's own counts, else (a model saved before checkpoints
    // kept them, or the model being trained) the training treebank's.
    std::optional<TagCounts> saved_counts;
    const auto saved = model_files.find(kTagCountsFile);
    if (saved != model_files.end()) {
      TFM_ASSIGN_OR_RETURN(
          saved_counts,
          ParseTagCounts(saved->second, absl::StrCat("the model's ", kTagCountsFile)));
    } else if (!tag_counts->has_value()) {
      absl::StatusOr<TagCounts> counts = ReadTagCounts(config.data().train());
      if (!counts.ok()) {
        return absl::Status(
            counts.status().code(),
            absl::StrCat("tag_dictionary_min_count reads the model's training treebank "
                         "(data.train; --tag_dictionary=0 parses without it): ",
                         counts.status().message()));
      }
      *tag_counts = *std::move(counts);
    }
    const TagCounts& counts = saved_counts.has_value() ? *saved_counts : **tag_counts;
    return MakeTreeConstraint(
        tokenizer, style,
        MakeLeafTagDictionary(counts, tokenizer, min_count,
                              settings.tag_dictionary_open_class(), WordsOf(inputs)));
  };
  hooks.format = [](const config::TaskConfig& config, const std::string& line,
                    const std::string& text) {
    return TreeLine(line, text, ConfigLeafStyle(config));
  };
  return hooks;
}

}  // namespace tfm
