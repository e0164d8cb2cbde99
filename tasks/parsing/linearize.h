// Trees as token sequences for sequence-to-sequence parsing (Vinyals et al.
// 2015, "Grammar as a Foreign Language"), and back.
//
// Format: depth-first, one token per bracket and per leaf, separated by
// spaces. A constituent opens with "(" + label and closes with ")" + label;
// a leaf is written as its placeholder. Example (John has a dog .):
//
//   (S (NP XX )NP (VP XX (NP XX XX )NP )VP . )S
//
// Leaves are "XX", except the punctuation tags that EVALB deletes
// (, . : `` ''), which are written as the tag itself: the model then
// predicts them, and a predicted tree deletes the same words as the gold one
// under EVALB (a word tagged XX where gold has "." would make EVALB reject
// the sentence as a length mismatch). LeafStyle::kPosTag writes every tag
// instead. LeafStyle::kWord writes the word itself,
//
//   (S (NP John )NP (VP has (NP a dog )NP )VP . )S
//
// which the parser copies from its input (tree_constraint.h): its decoder
// then sees which word it is at instead of counting leaves. LeafStyle::
// kIndexed numbers the placeholders from 0,
//
//   (S (NP XX0 )NP (VP XX1 (NP XX2 XX3 )NP )VP XX4 )S
//
// (punctuation too), which the parser is forced to write in order: the
// decoder's input then says which word it is at, and leaf i attends to
// source position i without having to count.
#ifndef TFM_TASKS_PARSING_LINEARIZE_H_
#define TFM_TASKS_PARSING_LINEARIZE_H_

#include <string>
#include <vector>

#include "tasks/parsing/tree.h"

namespace tfm {

inline constexpr char kLeafPlaceholder[] = "XX";

// The label of the root that Delinearize adds when the tokens do not form
// one constituent over all words; EVALB (COLLINS.prm) ignores it.
inline constexpr char kRepairRootLabel[] = "TOP";

enum class LeafStyle { kPlaceholder, kPosTag, kWord, kIndexed };

// Leaf `index`'s token under LeafStyle::kIndexed: "XX0", "XX1", ...
std::string IndexedLeaf(int index);

// The tag EVALB's COLLINS.prm deletes for a punctuation word as the Penn
// Treebank writes it (",", ".", "?", ";", "--", "``", "''" ...), else
// kLeafPlaceholder: the tags of word leaves, which carry no tag.
std::string PunctuationTagOrPlaceholder(const std::string& word);

// Whether `tag` is punctuation that EVALB's COLLINS.prm deletes.
bool IsEvalbPunctuationTag(const std::string& tag);

std::vector<std::string> Linearize(const Tree& tree, LeafStyle style = LeafStyle::kPlaceholder);

// Rebuilds a tree over exactly `words` from predicted `tokens`, repairing
// whatever the model got wrong instead of failing:
//  - a close token closes the innermost open constituent whatever its label
//    (the open label wins); a close with nothing open is dropped;
//  - constituents still open at the end are closed;
//  - constituents that end up covering no word are dropped;
//  - leaf tokens past the number of words are dropped, and words without a
//    leaf token are attached, tagged XX, to the end of the root;
//  - tokens that are neither a labeled open, a close nor a leaf ("(" alone,
//    empty) are ignored;
//  - unless the result is a single constituent, everything is put under a
//    root labeled kRepairRootLabel (with no words at all, an empty one).
// Leaf tags are the leaf tokens (for kWord and kIndexed leaves, the word's
// PunctuationTagOrPlaceholder), or `tags[i]` for word i when `tags` is given
// with one tag per word (e.g. gold or tagger tags for evaluation).
Tree Delinearize(const std::vector<std::string>& tokens, const std::vector<std::string>& words,
                 const std::vector<std::string>* tags = nullptr,
                 LeafStyle style = LeafStyle::kPlaceholder);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_LINEARIZE_H_
