// Bracket precision, recall and F1 of test trees against gold trees, as
// EVALB with COLLINS.prm computes them (see tasks/parsing/evalb.h).
//
//   bazel run //tools:evalb -- --gold=gold.txt --test=test.txt
//
// Files ending in .mrg hold treebank trees spread over lines; any other file
// holds one tree per line, and an empty line is a sentence the parser did not
// parse (EVALB counts it as skipped). Every skipped or error sentence is
// listed on stderr as "N : what [FILE:LINE]", naming the file the bad line is
// in; files with no sentence at all are an error.
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

bool IsBlank(const std::string& text) { return absl::StripAsciiWhitespace(text).empty(); }

// A sentence's score and, for a skip or an error, why, each with the
// file:line it is about (the gold or the test file, whichever is bad).
struct ScoredPair {
  EvalbSentence sentence;
  std::vector<std::string> notes;  // "what [FILE:LINE]".
};

std::string Note(const std::string& what, const SentenceText& where) {
  return absl::StrCat(what, " [", where.where, "]");
}

ScoredPair ScorePair(const SentenceText& gold_text, const SentenceText& test_text) {
  ScoredPair scored;
  const absl::StatusOr<Tree> gold = ReadTree(gold_text.text);
  const int length = gold.ok() ? EvalbLength(*gold) : 0;
  std::string gold_problem;
  if (!gold.ok()) {
    gold_problem = IsBlank(gold_text.text)
                       ? "empty gold line"
                       : absl::StrCat("unreadable gold tree: ", gold.status().message());
  }
  // A test sentence without words, empty line included, is a skip, as EVALB
  // counts it; a bad gold line beside it is still named.
  const auto skip = [&](const std::string& why) {
    scored.sentence = EvalbSkipSentence(length);
    scored.notes.push_back(Note(absl::StrCat("skip sentence: ", why), test_text));
    if (!gold.ok()) scored.notes.push_back(Note(gold_problem, gold_text));
    return scored;
  };
  if (IsBlank(test_text.text)) return skip("empty test line");
  const absl::StatusOr<Tree> test = ReadTree(test_text.text);
  if (!test.ok()) {
    if (test.status().message() == "tree is empty after removing -NONE- elements") {
      return skip("test tree has no words besides -NONE- elements");
    }
    const std::string error = absl::StrCat("unreadable test tree: ", test.status().message());
    scored.sentence = EvalbErrorSentence(length, error);
    scored.notes.push_back(Note(error, test_text));
    return scored;
  }
  if (!gold.ok()) {
    scored.sentence = EvalbErrorSentence(length, gold_problem);
    scored.notes.push_back(Note(gold_problem, gold_text));
    return scored;
  }
  scored.sentence = EvalbScoreTrees(*gold, *test);
  // "Length unmatch", "Words unmatch": the test tree does not fit its gold.
  if (scored.sentence.status == EvalbStatus::kError) {
    scored.notes.push_back(Note(scored.sentence.error, test_text));
  }
  return scored;
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
  if (gold->empty() && test->empty()) {
    std::cerr << "evalb: no sentences to score: gold file '" << gold_path << "' and test file '"
              << test_path << "' are both empty\n";
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
    const ScoredPair scored = ScorePair((*gold)[i], (*test)[i]);
    for (const std::string& note : scored.notes) std::cerr << i + 1 << " : " << note << "\n";
    scorer.Add(scored.sentence);
  }
  std::cout << scorer.Format();
  return 0;
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("evalb --gold=GOLD --test=TEST");
  // Files are given only by flag: a stray argument (a third file, a flag
  // without its "--") would otherwise be ignored without a word.
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::cerr << "evalb: unexpected argument '" << positional[1]
              << "': give the files as --gold=GOLD --test=TEST\n";
    return 2;
  }
  // Relative paths are the user's, also under `bazel run`.
  const std::string gold = tfm::ResolveUserPath(absl::GetFlag(FLAGS_gold));
  const std::string test = tfm::ResolveUserPath(absl::GetFlag(FLAGS_test));
  if (gold.empty() || test.empty()) {
    std::cerr << "evalb: both --gold and --test are required\n";
    return 2;
  }
  return tfm::Run(gold, test);
}
