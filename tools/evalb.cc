// Bracket precision, recall and F1 of test trees against gold trees, as
// EVALB with COLLINS.prm computes them (see tasks/parsing/evalb.h).
//
//   bazel run //tools:evalb -- --gold=gold.txt --test=test.txt
//
// Files ending in .mrg hold treebank trees spread over lines; any other file
// holds one tree per line, and an empty line is a sentence the parser did not
// parse (EVALB counts it as skipped).
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tasks/parsing/ptb_reader.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/evalb.h"
#include "core/metrics/text_lines.h"
#include "core/paths.h"

ABSL_FLAG(std::string, gold, "", "gold trees: one per line, or a .mrg file");
ABSL_FLAG(std::string, test, "", "test trees, aligned with --gold");

namespace tfm {
namespace {

// One sentence's tree text ("" when the line is empty) and its location.
struct SentenceText {
  std::string text;
  std::string where;
};

absl::StatusOr<std::vector<SentenceText>> ReadSentences(const std::string& path) {
  std::vector<SentenceText> sentences;
  if (absl::EndsWith(path, ".mrg")) {
    absl::StatusOr<std::unique_ptr<PtbReader>> reader = PtbReader::Open({path});
    if (!reader.ok()) return reader.status();
    TreeText tree;
    while ((*reader)->NextText(&tree)) sentences.push_back({tree.text, tree.where});
    if (!(*reader)->status().ok()) return (*reader)->status();
    if ((*reader)->skips().total() > 0) {
      std::cerr << "evalb: " << path << ": " << (*reader)->skips().Summary() << "\n";
    }
    return sentences;
  }
  absl::StatusOr<std::vector<std::string>> lines = ReadTextLines(path);
  if (!lines.ok()) return lines.status();
  for (size_t i = 0; i < lines->size(); ++i) {
    sentences.push_back({(*lines)[i], absl::StrCat(path, ":", i + 1)});
  }
  return sentences;
}

absl::StatusOr<Tree> ReadTree(const std::string& text) {
  absl::StatusOr<Tree> parsed = ParseBracketedTree(text);
  if (!parsed.ok()) return parsed.status();
  return NormalizePtbTree(*std::move(parsed));
}

EvalbSentence ScorePair(const SentenceText& gold_text, const SentenceText& test_text) {
  const absl::StatusOr<Tree> gold = ReadTree(gold_text.text);
  const int length = gold.ok() ? EvalbLength(*gold) : 0;
  // A test sentence without words, empty line included, is a skip.
  if (absl::StripAsciiWhitespace(test_text.text).empty()) return EvalbSkipSentence(length);
  const absl::StatusOr<Tree> test = ReadTree(test_text.text);
  if (!test.ok()) {
    if (test.status().message() == "tree is empty after removing -NONE- elements") {
      return EvalbSkipSentence(length);
    }
    return EvalbErrorSentence(length, absl::StrCat("unreadable test tree: ",
                                                   test.status().message()));
  }
  if (!gold.ok()) {
    return EvalbErrorSentence(length, absl::StrCat("unreadable gold tree: ",
                                                   gold.status().message()));
  }
  return EvalbScoreTrees(*gold, *test);
}

int Run(const std::string& gold_path, const std::string& test_path) {
  absl::StatusOr<std::vector<SentenceText>> gold = ReadSentences(gold_path);
  if (!gold.ok()) {
    std::cerr << "evalb: " << gold.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<SentenceText>> test = ReadSentences(test_path);
  if (!test.ok()) {
    std::cerr << "evalb: " << test.status().message() << "\n";
    return 1;
  }
  if (gold->size() != test->size()) {
    std::cerr << "evalb: sentence counts differ: gold file '" << gold_path << "' has "
              << gold->size() << ", test file '" << test_path << "' has " << test->size()
              << "\n";
    return 1;
  }
  EvalbScorer scorer;
  for (size_t i = 0; i < gold->size(); ++i) {
    const EvalbSentence sentence = ScorePair((*gold)[i], (*test)[i]);
    if (sentence.status == EvalbStatus::kError) {
      std::cerr << i + 1 << " : " << sentence.error << " [" << (*test)[i].where << "]\n";
    }
    scorer.Add(sentence);
  }
  std::cout << scorer.Format();
  return 0;
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("evalb --gold=GOLD --test=TEST");
  absl::ParseCommandLine(argc, argv);
  // Relative paths are the user's, also under `bazel run`.
  const std::string gold = tfm::ResolveUserPath(absl::GetFlag(FLAGS_gold));
  const std::string test = tfm::ResolveUserPath(absl::GetFlag(FLAGS_test));
  if (gold.empty() || test.empty()) {
    std::cerr << "evalb: both --gold and --test are required\n";
    return 2;
  }
  return tfm::Run(gold, test);
}
