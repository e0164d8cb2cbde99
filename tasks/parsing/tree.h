// Constituency trees in Penn Treebank bracket notation: reading, cleaning
// (traces, function tags, the unlabeled outer wrapper) and printing.
#ifndef TFM_TASKS_PARSING_TREE_H_
#define TFM_TASKS_PARSING_TREE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// A node is either a leaf, a part-of-speech tag over one word ("(NN dog)":
// label "NN", word "dog", no children), or a constituent with children and
// no word.
struct Tree {
  std::string label;
  std::string word;
  std::vector<Tree> children;

  bool is_leaf() const { return children.empty(); }
  bool operator==(const Tree& other) const {
    return label == other.label && word == other.word && children == other.children;
  }
};

// Deeper trees are rejected so that the recursive functions below cannot
// overflow the stack on hostile input; real treebanks stay far below.
inline constexpr int kMaxTreeDepth = 500;

// Parses one bracketed tree exactly as written (no cleaning). The outer
// wrapper of .mrg files, "( (S ...) )", becomes a root with an empty label.
// Malformed text (unbalanced brackets, a word beside constituents, an empty
// constituent, text after the tree) is InvalidArgument saying what is wrong.
absl::StatusOr<Tree> ParseBracketedTree(absl::string_view text);

// The label without function tags and indices, as parsers are evaluated:
// "NP-SBJ-1" -> "NP", "S-TPC=2" -> "S", "PP-LOC-CLR" -> "PP". Labels that
// start with '-' are tags in their own right and stay: "-NONE-", "-LRB-".
std::string StripFunctionTags(absl::string_view label);

// The usual cleaning before training or evaluation: unwraps an outer root
// labeled "", "TOP" or "ROOT" that has a single constituent child, drops
// "-NONE-" leaves (traces, empty elements) and the constituents left empty,
// and strips function tags from every label. Fails when nothing is left.
absl::StatusOr<Tree> NormalizePtbTree(Tree tree);

// One line: "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))".
std::string FormatTree(const Tree& tree);

// The words and the tags of the leaves, left to right.
std::vector<std::string> TreeWords(const Tree& tree);
std::vector<std::string> TreeTags(const Tree& tree);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_TREE_H_
