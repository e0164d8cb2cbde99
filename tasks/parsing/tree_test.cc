#include "tasks/parsing/tree.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(TreeTest, ParsesMrgTreeWithWrapperAndCleansIt) {
  const char* text = R"tree(( (S
    (NP-SBJ-1 (-NONE- *) )
    (S-TPC=2 (NP (-LRB- -LRB-) (NNP Vinken) (-RRB- -RRB-) ))
    (VP (VBZ is) (NP-PRD (NN chairman) ))
    (. .) )))tree";
  absl::StatusOr<Tree> raw = ParseBracketedTree(text);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->label, "");
  ASSERT_EQ(raw->children.size(), 1u);
  absl::StatusOr<Tree> clean = NormalizePtbTree(*raw);
  ASSERT_TRUE(clean.ok()) << clean.status();
  // The trace and the subject it leaves empty are gone; -LRB- keeps its
  // leading dash; function tags and indices are stripped.
  EXPECT_EQ(FormatTree(*clean),
            "(S (S (NP (-LRB- -LRB-) (NNP Vinken) (-RRB- -RRB-))) (VP (VBZ is) (NP (NN chairman))) "
            "(. .))");
  EXPECT_EQ(TreeWords(*clean),
            (std::vector<std::string>{"-LRB-", "Vinken", "-RRB-", "is", "chairman", "."}));
  EXPECT_EQ(TreeTags(*clean),
            (std::vector<std::string>{"-LRB-", "NNP", "-RRB-", "VBZ", "NN", "."}));
}

TEST(TreeTest, StripsFunctionTags) {
  EXPECT_EQ(StripFunctionTags("NP-SBJ-1"), "NP");
  EXPECT_EQ(StripFunctionTags("PP-LOC-CLR"), "PP");
  EXPECT_EQ(StripFunctionTags("S=3"), "S");
  EXPECT_EQ(StripFunctionTags("-NONE-"), "-NONE-");
  EXPECT_EQ(StripFunctionTags("-LRB-"), "-LRB-");
  EXPECT_EQ(StripFunctionTags("PRP$"), "PRP$");
  EXPECT_EQ(StripFunctionTags(""), "");
}

TEST(TreeTest, UnwrapsTopAndRootAndFormatsRoundTrip) {
  for (const char* text : {"(TOP (S (NN a)))", "(ROOT (S (NN a)))", "((S (NN a)))"}) {
    absl::StatusOr<Tree> tree = ParseBracketedTree(text);
    ASSERT_TRUE(tree.ok()) << text;
    absl::StatusOr<Tree> clean = NormalizePtbTree(*tree);
    ASSERT_TRUE(clean.ok());
    EXPECT_EQ(FormatTree(*clean), "(S (NN a))") << text;
  }
  // A wrapper over several pieces stays, named TOP.
  absl::StatusOr<Tree> multi = ParseBracketedTree("( (NP (NN a)) (. .) )");
  ASSERT_TRUE(multi.ok());
  EXPECT_EQ(FormatTree(*NormalizePtbTree(*multi)), "(TOP (NP (NN a)) (. .))");
  const std::string once = "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))";
  EXPECT_EQ(FormatTree(*ParseBracketedTree(once)), once);
}

TEST(TreeTest, RejectsMalformedTextWithReasons) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"(S (NP (NN a))", "missing ')'"},
      {"(S (NN a)))", "text after"},
      {"(S (NN a)) (S (NN b))", "text after"},
      {"(S (NP) (NN a))", "no children"},
      {"(S (DT a) word)", "beside constituents"},
      {"(NN a b)", "beside constituents"},
      {"word (S (NN a))", "before the first"},
      {")", "before the first"},
  };
  for (const auto& [text, reason] : cases) {
    absl::StatusOr<Tree> tree = ParseBracketedTree(text);
    ASSERT_FALSE(tree.ok()) << text;
    EXPECT_TRUE(absl::StrContains(tree.status().message(), reason))
        << text << ": " << tree.status();
  }
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "(X ";
  EXPECT_FALSE(ParseBracketedTree(deep).ok());
  // Only traces: nothing is left.
  absl::StatusOr<Tree> traces = ParseBracketedTree("( (S (NP (-NONE- *T*-1))) )");
  ASSERT_TRUE(traces.ok());
  EXPECT_FALSE(NormalizePtbTree(*traces).ok());
}

}  // namespace
}  // namespace tfm
