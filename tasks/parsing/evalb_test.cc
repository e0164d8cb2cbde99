// EVALB (COLLINS.prm) scores. No faithful reference runs here: the EVALB C
// program is not on PyPI (benepar's sdist does not ship it) and PYEVALB, the
// Python package, neither deletes punctuation nor counts brackets as a
// multiset, so it disagrees with EVALB by design. The cases below are worked
// out by hand from evalb.c's rules, each derivation written beside it.
#include "tasks/parsing/evalb.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/ptb_reader.h"
#include "tasks/parsing/tree.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

Tree Parse(const std::string& text) {
  absl::StatusOr<Tree> tree = ParseBracketedTree(text);
  EXPECT_TRUE(tree.ok()) << text << ": " << tree.status();
  return tree.ok() ? *tree : Tree{};
}

EvalbSentence Score(const std::string& gold, const std::string& test) {
  return EvalbScoreTrees(Parse(gold), Parse(test));
}

// Case A. Words after deleting "." : The cat sat on the mat (0..6).
// Gold brackets S(0,6) NP(0,2) VP(2,6) PP(3,6) NP(4,6); test S(0,6) NP(0,2)
// VP(2,3) PP(3,6) NP(4,6). Matched 4 (all but VP). VP(2,3) crosses no gold
// bracket (PP starts where it ends). P = R = 4/5.
const char kGoldA[] =
    "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))";
const char kTestA[] =
    "(S (NP (DT The) (NN cat)) (VP (VBD sat)) (PP (IN on) (NP (DT the) (NN mat))) (. .))";

// Case B. TOP is ignored; "," and "." are deleted on both sides (the test
// has no comma at all, yet the words match); NP-SBJ counts as NP; PRT and
// ADVP are equal. Words: He gave up smoking smoking (0..5).
// Gold: S(0,5) NP(0,1) VP(1,5) PRT(2,3) NP(3,5) NP(3,4) NP(4,5) = 7.
// Test: S(0,5) NP(0,1) VP(1,5) ADVP(2,3) NP(3,5) NP(3,5) = 6.
// Matched: S, NP(0,1), VP, ADVP~PRT, and NP(3,5) once (multiset) = 5.
// P = 5/6, R = 5/7, F = 2PR/(P+R) = 10/13. Tags: RP vs RB differ, 4/5.
const char kGoldB[] =
    "(TOP (S (NP-SBJ (PRP He)) (VP (VBD gave) (PRT (RP up)) (, ,) (NP (NP (NN smoking)) "
    "(NP (NN smoking)))) (. .)))";
const char kTestB[] =
    "(S (NP (PRP He)) (VP (VBD gave) (ADVP (RB up)) (NP (NP (NN smoking) (NN smoking)))) "
    "(. .))";

// Case C. Words a b c d. Gold S(0,4) NP(0,2) VP(2,4) NP(3,4); test S(0,4)
// X(0,1) Y(1,3). Matched 1 (S). Y(1,3) crosses NP(0,2): 0 < 1 < 2 < 3.
const char kGoldC[] = "(S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d))))";
const char kTestC[] = "(S (X (DT a)) (Y (NN b) (VB c)) (DT d))";

TEST(EvalbTest, HandComputedSentences) {
  const EvalbSentence a = Score(kGoldA, kTestA);
  EXPECT_EQ(a.status, EvalbStatus::kOk);
  EXPECT_EQ(a.gold_brackets, 5);
  EXPECT_EQ(a.test_brackets, 5);
  EXPECT_EQ(a.matched, 4);
  EXPECT_EQ(a.crossing, 0);
  EXPECT_EQ(a.words, 6);
  EXPECT_EQ(a.correct_tags, 6);
  EXPECT_EQ(a.length, 7);  // The cut-off length keeps punctuation.

  const EvalbSentence b = Score(kGoldB, kTestB);
  EXPECT_EQ(b.status, EvalbStatus::kOk);
  EXPECT_EQ(b.gold_brackets, 7);
  EXPECT_EQ(b.test_brackets, 6);
  EXPECT_EQ(b.matched, 5);
  EXPECT_EQ(b.crossing, 0);
  EXPECT_EQ(b.words, 5);
  EXPECT_EQ(b.correct_tags, 4);

  const EvalbSentence c = Score(kGoldC, kTestC);
  EXPECT_EQ(c.gold_brackets, 4);
  EXPECT_EQ(c.test_brackets, 3);
  EXPECT_EQ(c.matched, 1);
  EXPECT_EQ(c.crossing, 1);

  EvalbTotals b_only;
  b_only.Add(b);
  EXPECT_EQ(absl::StrFormat("%.2f %.2f %.2f", b_only.precision(), b_only.recall(), b_only.f1()),
            "83.33 71.43 76.92");
}

TEST(EvalbTest, BracketsOverDeletedWordsAreIgnored) {
  // NP covers only a trace and ADJP only punctuation: both span no word.
  const EvalbSentence s = Score("( (S (NP-SBJ (-NONE- *)) (ADJP (, ,)) (VP (VB go)) (. .)) )",
                                "(S (VP (VB go)))");
  EXPECT_EQ(s.status, EvalbStatus::kOk);
  EXPECT_EQ(s.gold_brackets, 2);  // S(0,1), VP(0,1); the "" wrapper is not counted.
  EXPECT_EQ(s.matched, 2);
  EXPECT_EQ(s.length, 3);  // ",", go and "." (the trace is not a word).
}

TEST(EvalbTest, ErrorAndSkipSentences) {
  const EvalbSentence length = Score("(S (NP (NN a)) (VP (VB b)))", "(S (NN a))");
  EXPECT_EQ(length.status, EvalbStatus::kError);
  EXPECT_EQ(length.error, "Length unmatch (2|1)");
  const EvalbSentence words = Score("(S (NP (NN a)) (VP (VB b)))", "(S (NN a) (VB c))");
  EXPECT_EQ(words.status, EvalbStatus::kError);
  EXPECT_EQ(words.error, "Words unmatch (b|c)");
  // A "." tagged as a word is kept in the test but deleted in gold.
  EXPECT_EQ(Score("(S (NN a) (. .))", "(S (NN a) (XX .))").error, "Length unmatch (1|2)");
  // A test tree with only deleted words is skipped.
  EXPECT_EQ(Score("(S (NN a) (. .))", "(S (. .))").status, EvalbStatus::kSkip);
}

TEST(EvalbTest, TotalsAndSummary) {
  EvalbScorer scorer;
  scorer.Add(Score(kGoldA, kTestA));
  scorer.Add(Score(kGoldB, kTestB));
  scorer.Add(Score(kGoldC, kTestC));
  scorer.Add(Score("(S (NP (NN a)) (VP (VB b)))", "(S (NN a))"));
  scorer.Add(EvalbSkipSentence(41));  // Too long for the len<=40 block.
  const EvalbTotals& all = scorer.all();
  EXPECT_EQ(all.sentences, 5);
  EXPECT_EQ(all.error_sentences, 1);
  EXPECT_EQ(all.skip_sentences, 1);
  EXPECT_EQ(all.valid_sentences(), 3);
  // Matched 4+5+1 = 10, gold 5+7+4 = 16, test 5+6+3 = 14:
  // R = 62.50, P = 71.43, F = 2 (10/14)(10/16) / (10/14 + 10/16) = 2/3.
  EXPECT_EQ(all.matched, 10);
  EXPECT_EQ(all.gold_brackets, 16);
  EXPECT_EQ(all.test_brackets, 14);
  EXPECT_EQ(scorer.short_sentences().sentences, 4);
  const std::string summary = scorer.Format();
  for (const char* line : {
           "Number of sentence        =      5\n",
           "Number of Valid sentence  =      3\n",
           "Bracketing Recall         =  62.50\n",
           "Bracketing Precision      =  71.43\n",
           "Bracketing FMeasure       =  66.67\n",
           "Complete match            =   0.00\n",
           "Average crossing          =   0.33\n",
           "No crossing               =  66.67\n",
           "Tagging accuracy          =  93.33\n",  // 6 + 4 + 4 of 15.
           "-- len<=40 --\nNumber of sentence        =      4\n",
           "Bracketing: matched 10, gold 16, test 14\n",
           "Precision = 71.43\nRecall = 62.50\nF1 = 66.67\n",
       }) {
    EXPECT_TRUE(absl::StrContains(summary, line)) << line << "\nin\n" << summary;
  }
}

std::vector<std::string> SampleFiles() {
  std::vector<std::string> files;
  for (int i = 1; i <= 199; ++i) {
    const std::string path =
        testing::SharedDataPath(absl::StrFormat("ptb_sample/wsj_%04d.mrg", i));
    if (std::filesystem::exists(path)) files.push_back(path);
  }
  return files;
}

TEST(EvalbTest, PtbSampleLinearizationRoundTripScoresOneHundred) {
  absl::StatusOr<std::unique_ptr<PtbReader>> reader = PtbReader::Open(SampleFiles());
  ASSERT_TRUE(reader.ok()) << reader.status();
  EvalbScorer exact;
  EvalbScorer damaged;
  int trees = 0;
  Tree gold;
  while ((*reader)->Next(&gold)) {
    ++trees;
    const std::vector<std::string> words = TreeWords(gold);
    const std::vector<std::string> tokens = Linearize(gold);
    const Tree rebuilt = Delinearize(tokens, words);
    const EvalbSentence sentence = EvalbScoreTrees(gold, rebuilt);
    ASSERT_EQ(sentence.status, EvalbStatus::kOk) << FormatTree(gold) << " " << sentence.error;
    ASSERT_EQ(sentence.matched, sentence.gold_brackets) << FormatTree(gold);
    exact.Add(sentence);
    // With every POS tag kept the rebuilt tree is identical.
    ASSERT_EQ(Delinearize(Linearize(gold, LeafStyle::kPosTag), words), gold);
    // A damaged prediction (every third closing bracket lost) still gives
    // a tree over the words, scored below 100.
    std::vector<std::string> broken;
    int closes = 0;
    for (const std::string& token : tokens) {
      if (token[0] == ')' && ++closes % 3 == 0) continue;
      broken.push_back(token);
    }
    const Tree repaired = Delinearize(broken, words, nullptr);
    ASSERT_EQ(TreeWords(repaired), words);
    const std::vector<std::string> tags = TreeTags(gold);
    damaged.Add(EvalbScoreTrees(gold, Delinearize(broken, words, &tags)));
  }
  EXPECT_EQ(trees, 3796);
  EXPECT_EQ(exact.all().valid_sentences(), 3796);
  EXPECT_EQ(exact.all().f1(), 100.0);
  EXPECT_TRUE(absl::StrContains(exact.Format(), "\nF1 = 100.00\n"));
  // Tags are XX except punctuation, so tagging accuracy is low.
  EXPECT_LT(100.0 * exact.all().correct_tags / exact.all().words, 20.0);
  EXPECT_EQ(damaged.all().error_sentences, 0);
  EXPECT_LT(damaged.all().f1(), 95.0);
  EXPECT_GT(damaged.all().f1(), 30.0);
}

}  // namespace
}  // namespace tfm
