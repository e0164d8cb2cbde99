#include "tasks/parsing/linearize.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

Tree Parse(const std::string& text) {
  absl::StatusOr<Tree> tree = ParseBracketedTree(text);
  EXPECT_TRUE(tree.ok()) << tree.status();
  return tree.ok() ? *tree : Tree{};
}

std::vector<std::string> Tokens(const std::string& text) {
  return absl::StrSplit(text, ' ', absl::SkipEmpty());
}

const std::vector<std::string> kWords = {"John", "has", "a", "dog", "."};

TEST(LinearizeTest, VinyalsFormat) {
  const Tree tree = Parse("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))");
  EXPECT_EQ(absl::StrJoin(Linearize(tree), " "), "(S (NP XX )NP (VP XX (NP XX XX )NP )VP . )S");
  EXPECT_EQ(absl::StrJoin(Linearize(tree, LeafStyle::kPosTag), " "),
            "(S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S");
  // Back with the words: the same tree, tagged XX where the tag was hidden.
  EXPECT_EQ(FormatTree(Delinearize(Linearize(tree), kWords)),
            "(S (NP (XX John)) (VP (XX has) (NP (XX a) (XX dog))) (. .))");
  EXPECT_EQ(Delinearize(Linearize(tree, LeafStyle::kPosTag), kWords), tree);
  const std::vector<std::string> tags = TreeTags(tree);
  EXPECT_EQ(Delinearize(Linearize(tree), kWords, &tags), tree);
}

TEST(LinearizeTest, WordLeaves) {
  const Tree tree = Parse("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))");
  EXPECT_EQ(absl::StrJoin(Linearize(tree, LeafStyle::kWord), " "),
            "(S (NP John )NP (VP has (NP a dog )NP )VP . )S");
  // Back: the words come from the word list; a word leaf carries no tag but
  // the punctuation tag EVALB deletes by.
  EXPECT_EQ(FormatTree(Delinearize(Linearize(tree, LeafStyle::kWord), kWords, nullptr,
                                   LeafStyle::kWord)),
            "(S (NP (XX John)) (VP (XX has) (NP (XX a) (XX dog))) (. .))");
  const std::vector<std::string> tags = TreeTags(tree);
  EXPECT_EQ(Delinearize(Linearize(tree, LeafStyle::kWord), kWords, &tags, LeafStyle::kWord), tree);
  // A word that reads as a tag ("NN") is still a word.
  EXPECT_EQ(FormatTree(Delinearize(Tokens("(S NN )S"), {"NN"}, nullptr, LeafStyle::kWord)),
            "(S (XX NN))");
}

TEST(LinearizeTest, IndexedLeaves) {
  const Tree tree = Parse("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))");
  EXPECT_EQ(absl::StrJoin(Linearize(tree, LeafStyle::kIndexed), " "),
            "(S (NP XX0 )NP (VP XX1 (NP XX2 XX3 )NP )VP XX4 )S");
  // The numbers are not read back: leaves take the words in order.
  EXPECT_EQ(FormatTree(Delinearize(Tokens("(S (NP XX7 )NP (VP XX0 (NP XX2 XX3 )NP )VP XX4 )S"),
                                   kWords, nullptr, LeafStyle::kIndexed)),
            "(S (NP (XX John)) (VP (XX has) (NP (XX a) (XX dog))) (. .))");
  const std::vector<std::string> tags = TreeTags(tree);
  EXPECT_EQ(Delinearize(Linearize(tree, LeafStyle::kIndexed), kWords, &tags, LeafStyle::kIndexed),
            tree);
}

TEST(LinearizeTest, PunctuationWordsGetTheTagsEvalbDeletes) {
  for (const char* word : {",", ".", "?", "!", ":", ";", "--", "...", "``", "''"}) {
    EXPECT_TRUE(IsEvalbPunctuationTag(PunctuationTagOrPlaceholder(word))) << word;
  }
  EXPECT_EQ(PunctuationTagOrPlaceholder("?"), ".");
  EXPECT_EQ(PunctuationTagOrPlaceholder(";"), ":");
  for (const char* word : {"dog", "'s", "'", "-LRB-", "$", "#", "NN", "XX"}) {
    EXPECT_EQ(PunctuationTagOrPlaceholder(word), kLeafPlaceholder) << word;
  }
}

TEST(LinearizeTest, RepairsBadPredictions) {
  const std::pair<const char*, const char*> cases[] = {
      // Too few leaves: the missing words join the root.
      {"(S (NP XX )NP (VP XX )VP )S", "(S (NP (XX John)) (VP (XX has)) (XX a) (XX dog) (XX .))"},
      // Too many leaves: the extra ones are dropped.
      {"(S (NP XX XX XX )NP (VP XX XX XX XX )VP )S",
       "(S (NP (XX John) (XX has) (XX a)) (VP (XX dog) (XX .)))"},
      // Unclosed brackets are closed at the end.
      {"(S (NP XX (VP XX XX XX .", "(S (NP (XX John) (VP (XX has) (XX a) (XX dog) (. .))))"},
      // Extra and mislabeled closes: the open label wins, unmatched closes go.
      {")S )NP (S (NP XX )VP XX XX XX . )NP )S )S",
       "(S (NP (XX John)) (XX has) (XX a) (XX dog) (. .))"},
      // Empty constituents vanish; several top pieces get a TOP root.
      {"(NP )NP (NP XX XX )NP (VP XX XX . )VP",
       "(TOP (NP (XX John) (XX has)) (VP (XX a) (XX dog) (. .)))"},
      // Nothing usable at all.
      {"( ) ", "(TOP (XX John) (XX has) (XX a) (XX dog) (XX .))"},
  };
  for (const auto& [tokens, expected] : cases) {
    EXPECT_EQ(FormatTree(Delinearize(Tokens(tokens), kWords)), expected) << tokens;
  }
  EXPECT_EQ(FormatTree(Delinearize({}, {"Hi"})), "(TOP (XX Hi))");
  EXPECT_EQ(Delinearize({"(S", "XX", ")S"}, {}).children.size(), 0u);
}

// Every node is a leaf with a word or a constituent with children.
bool Valid(const Tree& tree) {
  if (tree.is_leaf()) return !tree.word.empty();
  for (const Tree& child : tree.children) {
    if (!Valid(child)) return false;
  }
  return true;
}

TEST(LinearizeTest, RandomPredictionsAlwaysGiveValidTreesOverTheWords) {
  const std::vector<std::string> vocabulary = {"(S", "(NP", "(VP", ")S", ")NP", ")VP", ")",
                                               "(",  "XX",  "XX",  ".",  "",    "(PP", ")PP"};
  uint64_t state = 42;
  auto next = [&state](uint64_t range) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % range;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> tokens(next(40));
    for (std::string& token : tokens) token = vocabulary[next(vocabulary.size())];
    std::vector<std::string> words(1 + next(12));
    for (size_t i = 0; i < words.size(); ++i) words[i] = "w" + std::to_string(i);
    const Tree tree = Delinearize(tokens, words);
    ASSERT_EQ(TreeWords(tree), words) << absl::StrJoin(tokens, " ");
    ASSERT_TRUE(Valid(tree)) << FormatTree(tree);
    ASSERT_FALSE(tree.is_leaf());
    // The printed tree reads back the same.
    absl::StatusOr<Tree> reread = ParseBracketedTree(FormatTree(tree));
    ASSERT_TRUE(reread.ok()) << FormatTree(tree);
    ASSERT_EQ(*reread, tree);
  }
}

}  // namespace
}  // namespace tfm
