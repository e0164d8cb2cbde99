#include "tasks/parsing/tag_dictionary.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "core/data/ptb_reader.h"
#include "core/data/tree.h"
#include "core/decode/tree_constraint.h"
#include "core/status_macros.h"
#include "tasks/parsing/parse_evaluation.h"

namespace tfm {

absl::StatusOr<TagCounts> ReadTagCounts(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora) {
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> files, TreebankFiles(corpora));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PtbReader> reader, PtbReader::Open(files));
  TagCounts counts;
  Tree tree;
  while (reader->Next(&tree)) {
    const std::vector<std::string> words = TreeWords(tree);
    const std::vector<std::string> tags = TreeTags(tree);
    for (size_t i = 0; i < words.size() && i < tags.size(); ++i) ++counts[words[i]][tags[i]];
  }
  TFM_RETURN_IF_ERROR(reader->status());
  return counts;
}

namespace {

int64_t Occurrences(const std::map<std::string, int64_t>& tags) {
  int64_t seen = 0;
  for (const auto& [tag, count] : tags) seen += count;
  return seen;
}

// The word with its first letter's case flipped ("The" <-> "the"), or the
// word itself when it does not start with an ASCII letter.
std::string OtherCase(const std::string& word) {
  std::string other = word;
  if (!other.empty() && absl::ascii_isalpha(static_cast<unsigned char>(other[0]))) {
    other[0] = absl::ascii_isupper(static_cast<unsigned char>(other[0]))
                   ? absl::ascii_tolower(static_cast<unsigned char>(other[0]))
                   : absl::ascii_toupper(static_cast<unsigned char>(other[0]));
  }
  return other;
}

}  // namespace

std::vector<std::string> OpenClassTags(const TagCounts& counts) {
  std::map<std::string, int64_t> once;  // Tag -> words seen once that took it.
  int64_t total = 0;
  for (const auto& [word, tags] : counts) {
    // "Those" once at a sentence's start is not a rare word: "those" counts.
    const std::string other = OtherCase(word);
    const auto other_tags = other == word ? counts.end() : counts.find(other);
    const int64_t seen =
        Occurrences(tags) + (other_tags == counts.end() ? 0 : Occurrences(other_tags->second));
    if (seen != 1) continue;
    ++once[tags.begin()->first];
    ++total;
  }
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [tag, count] : once) {
    if (count >= kOpenClassMinShare * static_cast<double>(total)) by_count.emplace_back(count, tag);
  }
  std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> open;
  for (const auto& [count, tag] : by_count) open.push_back(tag);
  return open;
}

LeafTagDictionary MakeLeafTagDictionary(const TagCounts& counts, const Tokenizer& tokenizer,
                                        int64_t min_count, bool open_class) {
  // A tag's leaf piece, or -1 where the vocabulary spells it in several.
  std::map<std::string, int> leaf_piece;
  const auto piece_of = [&](const std::string& tag) {
    const auto found = leaf_piece.find(tag);
    if (found != leaf_piece.end()) return found->second;
    const std::vector<int> ids = tokenizer.Encode(tag);
    const bool whole = ids.size() == 1 && TreeConstraint::ClassifyPiece(tokenizer.IdToPiece(
                                              ids[0])) == TreeConstraint::kLeaf;
    return leaf_piece[tag] = whole ? ids[0] : -1;
  };
  // The leaf pieces of `tags`, or empty when one has no whole piece.
  const auto pieces_of = [&](const std::set<std::string>& tags) {
    std::vector<int> pieces;
    for (const std::string& tag : tags) {
      const int piece = piece_of(tag);
      if (piece < 0) return std::vector<int>();
      pieces.push_back(piece);
    }
    return pieces;
  };
  const auto tags_of = [&](const std::string& word) {
    std::set<std::string> tags;
    const auto found = counts.find(word);
    if (found != counts.end()) {
      for (const auto& [tag, count] : found->second) tags.insert(tag);
    }
    return tags;
  };
  LeafTagDictionary dictionary;
  std::set<std::string> open_tags;
  if (open_class) {
    for (const std::string& tag : OpenClassTags(counts)) open_tags.insert(tag);
    dictionary.unlisted_leaf_starts = pieces_of(open_tags);
    // Without whole pieces for the open classes, unlisted words stay free.
    if (dictionary.unlisted_leaf_starts.empty()) open_tags.clear();
  }
  const auto add = [&](const std::string& word, const std::set<std::string>& tags) {
    std::vector<int> pieces = pieces_of(tags);
    if (!pieces.empty()) dictionary.leaf_starts_by_word.emplace_back(tokenizer.Encode(word),
                                                                      std::move(pieces));
  };
  for (const auto& [word, tags] : counts) {
    if (Occurrences(tags) >= min_count) {
      add(word, tags_of(word));
    } else if (!open_tags.empty()) {
      std::set<std::string> allowed = open_tags;
      for (const std::string& tag : tags_of(word)) allowed.insert(tag);
      for (const std::string& tag : tags_of(OtherCase(word))) allowed.insert(tag);
      add(word, allowed);
    }
  }
  if (!open_tags.empty()) {
    // Other-case spellings never seen themselves: "Despite" at a sentence's
    // start when training only had "despite".
    for (const auto& [word, tags] : counts) {
      const std::string other = OtherCase(word);
      if (other == word || counts.count(other) > 0) continue;
      std::set<std::string> allowed = open_tags;
      for (const std::string& tag : tags_of(word)) allowed.insert(tag);
      add(other, allowed);
    }
  }
  return dictionary;
}

}  // namespace tfm
