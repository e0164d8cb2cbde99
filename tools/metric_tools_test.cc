// The metric command lines, run as users run them: what tools/evalb and
// tools/bleu say about bad input (which file, which line, what is wrong) and
// their exit codes. The scores themselves are tested in core/metrics and
// tasks/parsing.
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"
#include "tests/util/shell_quote.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ShellQuote;

constexpr char kTree[] = "(S (NP (DT The) (NN dog)) (VP (VBD barked)))";

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

testing::CommandResult Tool(const std::string& tool, const std::string& arguments) {
  return testing::RunCommand(
      absl::StrCat(ShellQuote(testing::RunfilePath(absl::StrCat("tools/", tool))), " ", arguments),
      60);
}

testing::CommandResult Evalb(const std::string& gold, const std::string& test) {
  return Tool("evalb", absl::StrCat("--gold=", ShellQuote(gold), " --test=", ShellQuote(test)));
}

// A bad gold line is named by the gold file's path and line, not the test
// file's (the pair's error sentence is the same either way).
TEST(EvalbToolTest, BadGoldLinesNameTheGoldFile) {
  const std::string good = WriteTemp("good.txt", absl::StrCat(kTree, "\n", kTree, "\n"));
  const std::string malformed =
      WriteTemp("malformed.txt", absl::StrCat(kTree, "\n(S (NP (DT The) (NN dog)\n"));
  testing::CommandResult result = Evalb(malformed, good);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("2 : unreadable gold tree: malformed tree: ",
                                     "unbalanced brackets (missing ')') [", malformed, ":2]")));
  EXPECT_THAT(result.output, Not(HasSubstr(absl::StrCat(good, ":2"))));
  EXPECT_THAT(result.output, HasSubstr("Number of Error sentence  =      1"));

  const std::string blank = WriteTemp("blank_gold.txt", absl::StrCat(kTree, "\n \n"));
  result = Evalb(blank, good);
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("2 : empty gold line [", blank, ":2]")));
  EXPECT_THAT(result.output, Not(HasSubstr(absl::StrCat(good, ":2"))));

  // A bad test line is still named by the test file.
  result = Evalb(good, malformed);
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("unreadable test tree: malformed tree: ",
                                     "unbalanced brackets (missing ')') [", malformed, ":2]")));
}

// Skipped sentences count as EVALB counts them (not scored, recall
// unchanged), and each one is listed with its file and line.
TEST(EvalbToolTest, EverySkippedSentenceIsListed) {
  const std::string gold =
      WriteTemp("skip_gold.txt", absl::StrCat(kTree, "\n", kTree, "\n", kTree, "\n", kTree, "\n"));
  const std::string test =
      WriteTemp("skip_test.txt", absl::StrCat(kTree, "\n\n   \n(S (NP (-NONE- *T*)))\n"));
  const testing::CommandResult result = Evalb(gold, test);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("2 : skip sentence: empty test line [", test, ":2]")));
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("3 : skip sentence: empty test line [", test, ":3]")));
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("4 : skip sentence: test tree has no words besides -NONE- ",
                                     "elements [", test, ":4]")));
  EXPECT_THAT(result.output, Not(HasSubstr(absl::StrCat(test, ":1]"))));
  EXPECT_THAT(result.output, HasSubstr("Number of Skip  sentence  =      3"));
  EXPECT_THAT(result.output, HasSubstr("Number of Valid sentence  =      1"));
  EXPECT_THAT(result.output, HasSubstr("\nRecall = 100.00"));
}

TEST(EvalbToolTest, FilesWithoutSentencesAreAnErrorNamingThem) {
  const std::string gold = WriteTemp("empty_gold.txt", "");
  const std::string test = WriteTemp("empty_test.txt", "");
  const testing::CommandResult result = Evalb(gold, test);
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output,
              HasSubstr(absl::StrCat("no sentences to score: gold file '", gold,
                                     "' and test file '", test, "' are both empty")));
  EXPECT_THAT(result.output, Not(HasSubstr("Number of sentence")));
}

// Files are given by flag only: an argument without a flag is refused,
// naming it, instead of being ignored.
TEST(MetricToolsTest, StrayArgumentsAreRefused) {
  const std::string text = WriteTemp("stray.txt", "a b c d\n");
  testing::CommandResult result =
      Tool("bleu", absl::StrCat("--hyp=", text, " --ref=", text, " other.txt"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("unexpected argument 'other.txt'"));
  EXPECT_THAT(result.output, Not(HasSubstr("BLEU =")));
  result = Tool("bleu", absl::StrCat("--hyp=", text, " --ref=", text));
  EXPECT_EQ(result.exit_code, 0) << result.output;

  const std::string tree = WriteTemp("stray_tree.txt", absl::StrCat(kTree, "\n"));
  result = Tool("evalb", absl::StrCat("--gold=", tree, " --test=", tree, " other.txt"));
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("unexpected argument 'other.txt'"));
  EXPECT_THAT(result.output, Not(HasSubstr("Number of sentence")));
}

// tools/bleu refuses references that are not UTF-8 (as sacreBLEU does),
// naming the line; `evaluate` reads references with the same function
// (tasks/common/seq2seq_decoding_test.cc).
TEST(MetricToolsTest, BleuRefusesReferencesThatAreNotUtf8) {
  const std::string hyp = WriteTemp("utf8_hyp.txt", "a b c d\ne f g h\n");
  const std::string ref = WriteTemp("utf8_ref.txt", "a b c d\ne \xff g h\n");
  const testing::CommandResult result =
      Tool("bleu", absl::StrCat("--hyp=", ShellQuote(hyp), " --ref=", ShellQuote(ref)));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat(ref, ":2: line is not valid UTF-8")));
}

}  // namespace
}  // namespace tfm
