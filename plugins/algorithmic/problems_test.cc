#include "plugins/algorithmic/problems.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/data/tokenizer.h"
#include "gtest/gtest.h"
#include "plugins/algorithmic/exact_match.h"

namespace algorithmic {
namespace {

AlgorithmicConfig Config(AlgorithmicConfig::Problem problem, int base = 10) {
  AlgorithmicConfig config;
  config.set_problem(problem);
  config.set_base(base);
  config.set_train_size(2000);
  config.set_valid_size(20);
  config.set_test_size(100);
  return config;
}

// The line's symbols read as one number, and back.
int64_t Value(const std::string& line, int base) {
  int64_t value = 0;
  for (absl::string_view digit : absl::StrSplit(line, ' ')) value = value * base + (digit[0] - '0');
  return value;
}

TEST(ProblemsTest, Solves) {
  EXPECT_EQ(Solve(Config(AlgorithmicConfig::REVERSE), "3 1 4 1 5"), "5 1 4 1 3");
  EXPECT_EQ(Solve(Config(AlgorithmicConfig::SORT), "3 1 4 1 5"), "1 1 3 4 5");
  EXPECT_EQ(Solve(Config(AlgorithmicConfig::ADD), "9 9 + 1"), "1 0 0");
  EXPECT_EQ(Solve(Config(AlgorithmicConfig::ADD), "0 + 0"), "0");
  EXPECT_EQ(Solve(Config(AlgorithmicConfig::ADD, 2), "1 1 + 1"), "1 0 0");
}

TEST(ProblemsTest, GeneratesEachProblemsLinesFromTheSeed) {
  for (const auto problem :
       {AlgorithmicConfig::REVERSE, AlgorithmicConfig::SORT, AlgorithmicConfig::ADD}) {
    AlgorithmicConfig config = Config(problem);
    const Splits splits = GenerateSplits(config);
    ASSERT_EQ(splits.train.sources.size(), 2000u);
    ASSERT_EQ(splits.valid.sources.size(), 20u);
    ASSERT_EQ(splits.test.sources.size(), 100u);
    std::set<std::string> symbols;
    for (size_t i = 0; i < splits.train.sources.size(); ++i) {
      const std::string& source = splits.train.sources[i];
      const std::string& target = splits.train.targets[i];
      const std::vector<std::string> parts = absl::StrSplit(source, " + ");
      for (const std::string& part : parts) {
        const std::vector<std::string> digits = absl::StrSplit(part, ' ');
        EXPECT_GE(digits.size(), 1u);
        EXPECT_LE(digits.size(), 8u) << source;
        symbols.insert(digits.begin(), digits.end());
      }
      if (problem == AlgorithmicConfig::ADD) {
        ASSERT_EQ(parts.size(), 2u) << source;
        EXPECT_EQ(Value(target, 10), Value(parts[0], 10) + Value(parts[1], 10)) << source;
      } else {
        std::vector<std::string> digits = absl::StrSplit(source, ' ');
        std::vector<std::string> answer = absl::StrSplit(target, ' ');
        if (problem == AlgorithmicConfig::REVERSE) {
          EXPECT_EQ(std::vector<std::string>(digits.rbegin(), digits.rend()), answer);
        } else {
          EXPECT_TRUE(std::is_sorted(answer.begin(), answer.end())) << target;
          std::sort(digits.begin(), digits.end());
          EXPECT_EQ(digits, answer);
        }
      }
    }
    EXPECT_EQ(symbols.size(), 10u);  // Every digit, so every piece is trained.
    // The same seed, the same lines; another seed, others.
    EXPECT_EQ(GenerateSplits(config).test.sources, splits.test.sources);
    config.set_seed(2);
    EXPECT_NE(GenerateSplits(config).test.sources, splits.test.sources);
  }
}

TEST(ProblemsTest, TheVocabularyHasOnePiecePerSymbol) {
  for (const auto problem : {AlgorithmicConfig::REVERSE, AlgorithmicConfig::ADD}) {
    for (int base : {10, 4}) {
      const AlgorithmicConfig config = Config(problem, base);
      const Splits splits = GenerateSplits(config);
      tfm::config::TokenizerConfig tokenizer_config;
      tokenizer_config.set_vocab_size(VocabularySize(config));
      size_t next = 0;
      absl::StatusOr<tfm::Tokenizer> tokenizer =
          tfm::Tokenizer::Train(tokenizer_config, [&](std::string* line) -> absl::StatusOr<bool> {
            if (next == splits.train.sources.size()) return false;
            *line = splits.train.sources[next++];
            return true;
          });
      ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
      EXPECT_EQ(tokenizer->vocab_size(), VocabularySize(config));
      for (const std::string& line : splits.test.sources) {
        const std::vector<int> ids = tokenizer->Encode(line);
        EXPECT_EQ(ids.size(), std::vector<std::string>(absl::StrSplit(line, ' ')).size()) << line;
        EXPECT_EQ(*tokenizer->Decode(ids), line);
      }
    }
  }
}

TEST(ExactMatchTest, CountsWholeSequences) {
  const tfm::CorpusMetric metric = ExactSequenceAccuracy();
  EXPECT_EQ(metric.name, "accuracy");
  absl::StatusOr<tfm::CorpusScore> score =
      metric.score({"1 2 3", " 4  5 ", "6 7", ""}, {"1 2 3", "4 5", "6 8", "9"});
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_DOUBLE_EQ(score->value, 50.0);
  EXPECT_EQ(score->report, "exact-sequence accuracy = 50.00% (2/4)");
  EXPECT_FALSE(metric.score({"1"}, {"1", "2"}).ok());
}

}  // namespace
}  // namespace algorithmic
