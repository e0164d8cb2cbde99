#include "tasks/parsing/linearize.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

void AppendTokens(const Tree& tree, LeafStyle style, std::vector<std::string>* out,
                  int* leaves) {
  if (tree.is_leaf()) {
    const int index = (*leaves)++;
    if (style == LeafStyle::kWord) {
      out->push_back(tree.word);
      return;
    }
    if (style == LeafStyle::kIndexed) {
      out->push_back(IndexedLeaf(index));
      return;
    }
    const bool keep_tag = style == LeafStyle::kPosTag || IsEvalbPunctuationTag(tree.label);
    out->push_back(keep_tag ? tree.label : kLeafPlaceholder);
    return;
  }
  out->push_back(absl::StrCat("(", tree.label));
  for (const Tree& child : tree.children) AppendTokens(child, style, out, leaves);
  out->push_back(absl::StrCat(")", tree.label));
}

// Closes the innermost open constituent into its parent, dropping it when it
// covers no word.
void CloseInnermost(std::vector<Tree>* open) {
  Tree node = std::move(open->back());
  open->pop_back();
  if (!node.children.empty()) open->back().children.push_back(std::move(node));
}

}  // namespace

bool IsEvalbPunctuationTag(const std::string& tag) {
  return tag == "," || tag == "." || tag == ":" || tag == "``" || tag == "''";
}

std::string IndexedLeaf(int index) { return absl::StrCat(kLeafPlaceholder, index); }

std::string PunctuationTagOrPlaceholder(const std::string& word) {
  static const auto* const kTags = new absl::flat_hash_map<std::string, std::string>{
      {",", ","},  {".", "."},   {"?", "."},   {"!", "."},    {":", ":"}, {";", ":"},
      {"--", ":"}, {"...", ":"}, {"-", ":"},   {"``", "``"},  {"`", "``"}, {"''", "''"}};
  const auto it = kTags->find(word);
  return it == kTags->end() ? kLeafPlaceholder : it->second;
}

std::vector<std::string> Linearize(const Tree& tree, LeafStyle style) {
  std::vector<std::string> tokens;
  int leaves = 0;
  AppendTokens(tree, style, &tokens, &leaves);
  return tokens;
}

Tree Delinearize(const std::vector<std::string>& tokens, const std::vector<std::string>& words,
                 const std::vector<std::string>* tags, LeafStyle style) {
  const bool use_tags = tags != nullptr && tags->size() == words.size();
  // open[0] collects the top-level pieces; it is never closed by a token.
  std::vector<Tree> open(1);
  open[0].label = kRepairRootLabel;
  size_t next_word = 0;
  auto add_leaf = [&](const std::string& tag) {
    Tree leaf;
    leaf.label = use_tags ? (*tags)[next_word] : tag;
    leaf.word = words[next_word];
    ++next_word;
    open.back().children.push_back(std::move(leaf));
  };
  for (const std::string& token : tokens) {
    if (token.empty()) continue;
    if (token[0] == '(') {
      if (token.size() == 1) continue;
      // Depth is bounded by the number of tokens in flight only; the tree
      // functions recurse, so very deep predictions are flattened instead.
      if (static_cast<int>(open.size()) >= kMaxTreeDepth) continue;
      Tree node;
      node.label = token.substr(1);
      open.push_back(std::move(node));
    } else if (token[0] == ')') {
      if (open.size() > 1) CloseInnermost(&open);
    } else if (next_word < words.size()) {
      const bool tagless = style == LeafStyle::kWord || style == LeafStyle::kIndexed;
      add_leaf(tagless ? PunctuationTagOrPlaceholder(words[next_word]) : token);
    }
  }
  while (open.size() > 1) CloseInnermost(&open);
  Tree root = std::move(open[0]);
  // Words the prediction left out go at the end of the root constituent.
  Tree* host = &root;
  if (root.children.size() == 1 && !root.children[0].is_leaf()) host = &root.children[0];
  while (next_word < words.size()) {
    Tree leaf;
    leaf.label = use_tags ? (*tags)[next_word] : kLeafPlaceholder;
    leaf.word = words[next_word];
    ++next_word;
    host->children.push_back(std::move(leaf));
  }
  if (root.children.size() == 1 && !root.children[0].is_leaf()) {
    Tree only = std::move(root.children[0]);
    return only;
  }
  return root;
}

}  // namespace tfm
