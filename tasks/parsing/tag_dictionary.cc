#include "tasks/parsing/tag_dictionary.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tasks/parsing/ptb_reader.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/tree_constraint.h"
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

std::string FormatTagCounts(const TagCounts& counts) {
  std::string text;
  for (const auto& [word, tags] : counts) {
    for (const auto& [tag, count] : tags) {
      absl::StrAppend(&text, word, "\t", tag, "\t", count, "\n");
    }
  }
  return text;
}

absl::StatusOr<TagCounts> ParseTagCounts(absl::string_view text, const std::string& name) {
  TagCounts counts;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, '\t');
    int64_t count = 0;
    if (fields.size() != 3 || fields[0].empty() || fields[1].empty() ||
        !absl::SimpleAtoi(fields[2], &count) || count <= 0) {
      return absl::DataLossError(absl::StrCat(
          name, ":", line_number, ": expected word<TAB>tag<TAB>count (a positive count), got '",
          line.substr(0, 80), "'"));
    }
    counts[std::string(fields[0])][std::string(fields[1])] += count;
  }
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

// The tags of `word` and of its other-case spelling, together.
std::map<std::string, int64_t> TagsInEitherCase(const TagCounts& counts, const std::string& word) {
  std::map<std::string, int64_t> tags;
  const std::string other = OtherCase(word);
  for (const std::string& spelling : {word, other}) {
    const auto found = counts.find(spelling);
    if (found != counts.end()) {
      for (const auto& [tag, count] : found->second) tags[tag] += count;
    }
    if (other == word) break;
  }
  return tags;
}

// A word's signatures, most specific first: shape and 3-, 2- and 1-letter
// ending, then the shape alone.
std::vector<std::string> Signatures(const std::string& word) {
  std::string shape;
  const unsigned char first = word.empty() ? 0 : static_cast<unsigned char>(word[0]);
  if (std::any_of(word.begin(), word.end(),
                  [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
    shape = "digit";
  } else if (absl::ascii_isupper(first)) {
    shape = "capital";
  } else if (absl::ascii_islower(first)) {
    shape = "lower";
  } else {
    shape = "other";
  }
  if (word.find('-') != std::string::npos) shape += "-hyphen";
  const std::string lower = absl::AsciiStrToLower(word);
  std::vector<std::string> signatures;
  for (size_t letters : {3, 2, 1}) {
    if (lower.size() > letters) {
      signatures.push_back(absl::StrCat(shape, ":", lower.substr(lower.size() - letters)));
    }
  }
  signatures.push_back(shape);
  return signatures;
}

}  // namespace

ShapeTags::ShapeTags(const TagCounts& counts) {
  for (const auto& [word, tags] : counts) {
    if (Occurrences(tags) > 2) continue;
    for (const std::string& signature : Signatures(word)) {
      for (const auto& [tag, count] : tags) tags_by_signature_[signature][tag] += count;
    }
  }
}

std::set<std::string> ShapeTags::Of(const std::string& word) const {
  for (const std::string& signature : Signatures(word)) {
    const auto found = tags_by_signature_.find(signature);
    if (found == tags_by_signature_.end()) continue;
    const int64_t words = Occurrences(found->second);
    if (words < kShapeMinWords) continue;
    std::set<std::string> tags;
    for (const auto& [tag, count] : found->second) {
      if (count >= kShapeMinShare * static_cast<double>(words)) tags.insert(tag);
    }
    return tags;
  }
  return {};
}

std::vector<std::string> OpenClassTags(const TagCounts& counts) {
  std::map<std::string, int64_t> once;  // Tag -> words seen once that took it.
  int64_t total = 0;
  for (const auto& entry : counts) {
    // "Those" once at a sentence's start is not a rare word: "those" counts.
    const std::map<std::string, int64_t> tags = TagsInEitherCase(counts, entry.first);
    if (Occurrences(tags) != 1) continue;
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
                                        int64_t min_count, bool open_class,
                                        const std::set<std::string>& input_words) {
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
  // The leaf pieces a word seen with `seen` (tag -> occurrences) may take:
  // those of its tags that are one whole piece, and those of `extra` (the
  // open classes). Empty (the word stays free) where tags the vocabulary
  // spells in several pieces ("PRP$": "▁PRP" "$"; the constraint holds a
  // word to whole pieces only) are more than kMaxUnspelledShare of `seen`:
  // "its" stays free, while "a" loses the one LS it had beside ~1,000 DT.
  const auto leaf_pieces = [&](const std::map<std::string, int64_t>& seen,
                               const std::set<std::string>& extra) {
    int64_t total = 0, unspelled = 0;
    std::vector<int> pieces;
    for (const auto& [tag, count] : seen) {
      total += count;
      const int piece = piece_of(tag);
      if (piece < 0) {
        unspelled += count;
      } else {
        pieces.push_back(piece);
      }
    }
    if (unspelled > kMaxUnspelledShare * static_cast<double>(total)) return std::vector<int>();
    for (const std::string& tag : extra) {
      const int piece = piece_of(tag);
      if (piece >= 0) pieces.push_back(piece);
    }
    std::sort(pieces.begin(), pieces.end());
    pieces.erase(std::unique(pieces.begin(), pieces.end()), pieces.end());
    return pieces;
  };
  LeafTagDictionary dictionary;
  std::set<std::string> open_tags;
  if (open_class) {
    for (const std::string& tag : OpenClassTags(counts)) open_tags.insert(tag);
    dictionary.unlisted_leaf_starts = leaf_pieces({}, open_tags);
    // Without whole pieces for the open classes, unlisted words stay free.
    if (dictionary.unlisted_leaf_starts.empty()) open_tags.clear();
  }
  // An entry with no pieces keeps its word free (LeafRule).
  const auto add = [&](const std::string& word, std::vector<int> pieces) {
    dictionary.leaf_starts_by_word.emplace_back(tokenizer.Encode(word), std::move(pieces));
  };
  for (const auto& [word, tags] : counts) {
    if (Occurrences(tags) >= min_count) {
      add(word, leaf_pieces(tags, {}));
    } else if (!open_tags.empty()) {
      add(word, leaf_pieces(TagsInEitherCase(counts, word), open_tags));
    }
  }
  if (!open_tags.empty()) {
    // Other-case spellings never seen themselves: "Despite" at a sentence's
    // start when training only had "despite".
    for (const auto& [word, tags] : counts) {
      const std::string other = OtherCase(word);
      if (other == word || counts.count(other) > 0) continue;
      add(other, leaf_pieces(tags, open_tags));
    }
    // The input's unseen words by their shape.
    const ShapeTags shape_tags(counts);
    for (const std::string& word : input_words) {
      if (!TagsInEitherCase(counts, word).empty()) continue;
      const std::set<std::string> tags = shape_tags.Of(word);
      if (tags.empty()) continue;
      std::vector<int> pieces = leaf_pieces({}, tags);
      if (!pieces.empty()) add(word, std::move(pieces));
    }
  }
  return dictionary;
}

}  // namespace tfm
