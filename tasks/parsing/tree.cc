#include "tasks/parsing/tree.h"

#include <cctype>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

enum class TokenKind { kOpen, kClose, kAtom };

struct Token {
  TokenKind kind;
  absl::string_view text;  // The atom, for kAtom.
};

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

std::vector<Token> Tokenize(absl::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (IsSpace(c)) {
      ++i;
    } else if (c == '(') {
      tokens.push_back({TokenKind::kOpen, {}});
      ++i;
    } else if (c == ')') {
      tokens.push_back({TokenKind::kClose, {}});
      ++i;
    } else {
      const size_t start = i;
      while (i < text.size() && !IsSpace(text[i]) && text[i] != '(' && text[i] != ')') ++i;
      tokens.push_back({TokenKind::kAtom, text.substr(start, i - start)});
    }
  }
  return tokens;
}

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed tree: ", what));
}

// Removes "-NONE-" leaves and constituents left without children; returns
// false when `tree` itself is to be removed.
bool DropEmptyElements(Tree* tree) {
  if (tree->is_leaf()) return tree->label != "-NONE-";
  std::vector<Tree> kept;
  for (Tree& child : tree->children) {
    if (DropEmptyElements(&child)) kept.push_back(std::move(child));
  }
  tree->children = std::move(kept);
  return !tree->children.empty();
}

void StripAllFunctionTags(Tree* tree) {
  tree->label = StripFunctionTags(tree->label);
  for (Tree& child : tree->children) StripAllFunctionTags(&child);
}

void AppendFormatted(const Tree& tree, std::string* out) {
  absl::StrAppend(out, "(", tree.label);
  if (tree.is_leaf()) {
    absl::StrAppend(out, " ", tree.word);
  } else {
    for (const Tree& child : tree.children) {
      out->push_back(' ');
      AppendFormatted(child, out);
    }
  }
  out->push_back(')');
}

void CollectLeaves(const Tree& tree, bool words, std::vector<std::string>* out) {
  if (tree.is_leaf()) {
    out->push_back(words ? tree.word : tree.label);
    return;
  }
  for (const Tree& child : tree.children) CollectLeaves(child, words, out);
}

bool IsWrapperLabel(absl::string_view label) {
  return label.empty() || label == "TOP" || label == "ROOT";
}

}  // namespace

absl::StatusOr<Tree> ParseBracketedTree(absl::string_view text) {
  const std::vector<Token> tokens = Tokenize(text);
  if (tokens.empty()) return Malformed("empty text");
  if (tokens[0].kind != TokenKind::kOpen) return Malformed("text before the first '('");
  // Open constituents, innermost last; the finished root lands in `root`.
  std::vector<Tree> open;
  Tree root;
  bool done = false;
  size_t i = 0;
  while (i < tokens.size()) {
    if (done) return Malformed("text after the end of the tree");
    const Token& token = tokens[i];
    if (token.kind == TokenKind::kOpen) {
      if (static_cast<int>(open.size()) >= kMaxTreeDepth) return Malformed("nested too deeply");
      Tree node;
      ++i;
      if (i < tokens.size() && tokens[i].kind == TokenKind::kAtom) {
        node.label = std::string(tokens[i].text);
        ++i;
        // "(TAG word)" is a leaf.
        if (i + 1 < tokens.size() && tokens[i].kind == TokenKind::kAtom &&
            tokens[i + 1].kind == TokenKind::kClose) {
          node.word = std::string(tokens[i].text);
          i += 2;
          if (open.empty()) {
            root = std::move(node);
            done = true;
          } else {
            open.back().children.push_back(std::move(node));
          }
          continue;
        }
      }
      open.push_back(std::move(node));
    } else if (token.kind == TokenKind::kClose) {
      if (open.empty()) return Malformed("')' without a matching '('");
      Tree node = std::move(open.back());
      open.pop_back();
      if (node.children.empty()) {
        return Malformed(absl::StrCat("constituent '", node.label, "' has no children"));
      }
      ++i;
      if (open.empty()) {
        root = std::move(node);
        done = true;
      } else {
        open.back().children.push_back(std::move(node));
      }
    } else {
      return Malformed(absl::StrCat("word '", token.text, "' beside constituents"));
    }
  }
  if (!done) return Malformed("unbalanced brackets (missing ')')");
  return root;
}

std::string StripFunctionTags(absl::string_view label) {
  if (label.empty() || label[0] == '-') return std::string(label);
  const size_t cut = label.find_first_of("-=");
  return std::string(label.substr(0, cut));
}

absl::StatusOr<Tree> NormalizePtbTree(Tree tree) {
  while (IsWrapperLabel(tree.label) && tree.children.size() == 1 &&
         !tree.children[0].is_leaf()) {
    Tree child = std::move(tree.children[0]);
    tree = std::move(child);
  }
  if (!DropEmptyElements(&tree)) {
    return absl::InvalidArgumentError("tree is empty after removing -NONE- elements");
  }
  // Removing traces can leave a wrapper with one constituent again.
  while (IsWrapperLabel(tree.label) && tree.children.size() == 1 &&
         !tree.children[0].is_leaf()) {
    Tree child = std::move(tree.children[0]);
    tree = std::move(child);
  }
  StripAllFunctionTags(&tree);
  // A wrapper that stays (several children) gets a visible name.
  if (tree.label.empty()) tree.label = "TOP";
  return tree;
}

std::string FormatTree(const Tree& tree) {
  std::string out;
  AppendFormatted(tree, &out);
  return out;
}

std::vector<std::string> TreeWords(const Tree& tree) {
  std::vector<std::string> words;
  CollectLeaves(tree, /*words=*/true, &words);
  return words;
}

std::vector<std::string> TreeTags(const Tree& tree) {
  std::vector<std::string> tags;
  CollectLeaves(tree, /*words=*/false, &tags);
  return tags;
}

}  // namespace tfm
