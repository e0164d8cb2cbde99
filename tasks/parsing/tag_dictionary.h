// ParsingConfig.tag_dictionary_min_count (parsing_config.proto): the
// part-of-speech tags each word had in the training treebank, as the tree
// constraint's tag dictionary (tree_constraint.h,
// LeafRule::leaf_starts_by_word). A model
// that writes tags as leaves (tree_leaves: POS_TAGS) otherwise tags a word
// from the brackets around it as much as from the word: "(NP (NNP Genetics)
// (NNP Institute) (CC and) (NNP is) ..." — with the dictionary "is" can only
// be VBZ (or whatever else it was in training), and the search looks for
// the brackets that fit.
#ifndef TFM_TASKS_PARSING_TAG_DICTIONARY_H_
#define TFM_TASKS_PARSING_TAG_DICTIONARY_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"
#include "core/data/tokenizer.h"

namespace tfm {

// Word -> tag -> occurrences.
using TagCounts = std::map<std::string, std::map<std::string, int64_t>>;

// The tags of every word of `corpora` (PTB_MRG treebanks, cleaned as
// training reads them: no -NONE- leaves). Errors name the corpus and file.
absl::StatusOr<TagCounts> ReadTagCounts(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora);

// The tag counts as a parser's checkpoint keeps them (a task file,
// runtime/train/checkpoint.h), so that it parses with its dictionary where the
// training treebank is not: one "word<TAB>tag<TAB>count" line each.
inline constexpr char kTagCountsFile[] = "task_tag_counts.tsv";
std::string FormatTagCounts(const TagCounts& counts);
// Errors name `name`, the line and what is wrong with it.
absl::StatusOr<TagCounts> ParseTagCounts(absl::string_view text, const std::string& name);

// The constraint's dictionary for `tokenizer` (LeafRule's
// leaf_starts_by_word and unlisted_leaf_starts): each word seen at least
// `min_count` times, spelled in its source pieces, with the leaf piece of
// each of its tags. Tags that are not one whole leaf piece of the vocabulary
// cannot be held to: a word loses them where they are at most
// kMaxUnspelledShare of its occurrences, else it takes any leaf.
//
// With `open_class`, rarer words are listed too, with their own tags, their
// other-case spelling's ("The" / "the": a sentence's first word) and the
// open-class tags, and so are other-case spellings of listed words never
// seen themselves; every other word takes an open-class tag. The
// open-class tags are those of words seen once (in either case of their
// first letter), each at least kOpenClassMinShare of them: on
// wsj_0001-0169 NNP, NN, JJ, NNS, CD, VBG, VBN, VB, VBD, VBZ, RB, VBP and
// NNPS; the stray IN, FW, DT ... of a few odd words (0.11% and less) are
// not. Words of `input_words` (the lines to decode) never seen in either
// case are listed with their ShapeTags where it has some.
struct LeafTagDictionary {
  std::vector<std::pair<std::vector<int>, std::vector<int>>> leaf_starts_by_word;
  std::vector<int> unlisted_leaf_starts;
};
inline constexpr double kOpenClassMinShare = 0.005;
inline constexpr double kMaxUnspelledShare = 0.05;
LeafTagDictionary MakeLeafTagDictionary(const TagCounts& counts, const Tokenizer& tokenizer,
                                        int64_t min_count, bool open_class,
                                        const std::set<std::string>& input_words = {});

// The tags a word never seen in training may take by its shape (digits,
// capital, lower case or other first letter; a hyphen or not) and its
// ending, as parsers' unknown-word classes: those that rare training words
// (seen at most twice) of its shape and longest shared ending (3, 2 or 1
// letters, then the shape alone) took, each at least kShapeMinShare of
// them, at the first of those levels with kShapeMinWords such words.
// "-ed" in lower case gives VBN, VBD, JJ, ..., never NNP. Empty when no
// level has as many.
class ShapeTags {
 public:
  explicit ShapeTags(const TagCounts& counts);
  std::set<std::string> Of(const std::string& word) const;

 private:
  // Signature -> tag -> rare words.
  std::map<std::string, std::map<std::string, int64_t>> tags_by_signature_;
};
inline constexpr int64_t kShapeMinWords = 20;
inline constexpr double kShapeMinShare = 0.02;

// The open-class tags of `counts` (above), most frequent first.
std::vector<std::string> OpenClassTags(const TagCounts& counts);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_TAG_DICTIONARY_H_
