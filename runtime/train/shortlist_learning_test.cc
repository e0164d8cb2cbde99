#include "runtime/train/shortlist_learning.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/data/binary_corpus_format.h"
#include "gtest/gtest.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_testing.h"

namespace tfm {
namespace {

// Source 10 always comes with target 20 (and sometimes with the frequent
// 5): 20 ranks first for 10 although 5 co-occurs with it as often, since 5
// is everywhere. Excluded ids are neither sources nor targets.
TEST(ShortlistCounterTest, RanksByDiceAndCountsFrequentTargets) {
  ShortlistCounter counter(32, /*excluded=*/{0, 3}, /*max_pairs=*/1000);
  for (int i = 0; i < 10; ++i) {
    counter.Add({{10, 13 + i % 2, 3}, {20, 5, 3}});
    counter.Add({{12, 3}, {5, 5, 21, 3}});
  }
  counter.Add({{0, 30}, {0, 31}});
  const ShortlistTable table = counter.Table(/*stored_frequent=*/3, /*stored_best=*/2);
  EXPECT_EQ(counter.pairs_added(), 21);
  EXPECT_EQ(table.vocabulary_size, 32);
  // Token counts: 5 x30, 20 x10, 21 x10 (ties by id), 31 x1.
  EXPECT_EQ(table.frequent, (std::vector<int32_t>{5, 20, 21}));
  EXPECT_EQ(table.best[10], (std::vector<int32_t>{20, 5}));
  EXPECT_EQ(table.best[12], (std::vector<int32_t>{21, 5}));
  EXPECT_EQ(table.best[30], (std::vector<int32_t>{31}));
  EXPECT_TRUE(table.best[0].empty());
  EXPECT_TRUE(table.best[3].empty());
  for (const std::vector<int32_t>& list : table.best) {
    EXPECT_EQ(std::count(list.begin(), list.end(), 3), 0);
  }
  EXPECT_EQ(counter.dropped_up_to(), 0u);
}

// Past max_pairs the rarest pairs go; pairs seen often survive and still
// rank first.
TEST(ShortlistCounterTest, DropsRarePairsBeyondItsBudget) {
  ShortlistCounter counter(1000, {}, /*max_pairs=*/40);
  for (int i = 0; i < 200; ++i) {
    counter.Add({{1, 100 + i % 300}, {2, 500 + i}});  // 1 -> 2 always; noise once.
  }
  EXPECT_GT(counter.dropped_up_to(), 0u);
  const ShortlistTable table = counter.Table(10, 3);
  ASSERT_FALSE(table.best[1].empty());
  EXPECT_EQ(table.best[1][0], 2);
}

// On the toy EN-DE corpus with its SentencePiece vocabulary: a few best
// targets per source token cover every reference token of every training
// pair, while the candidates stay a part of the vocabulary.
TEST(LearnShortlistTest, CoversTheReferenceTokensOfTheTrainingPairs) {
  const std::string dir = ::testing::TempDir() + "/shortlist_toy";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const config::DataConfig data = testing::WriteToyCorpus(dir);
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, dir, nullptr);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::ostringstream log;
  absl::StatusOr<ShortlistTable> table = LearnShortlist(data, *tokenizer, {}, log);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_NE(log.str().find("60 pairs counted"), std::string::npos) << log.str();
  EXPECT_EQ(table->vocabulary_checksum, Fnv1a64(tokenizer->model()));
  const std::string path = dir + "/toy.shortlist";
  ASSERT_TRUE(WriteShortlistFile(path, *table).ok());
  absl::StatusOr<VocabularyShortlist> shortlist =
      LoadShortlist(path, *tokenizer, /*frequent_count=*/0, /*best_count=*/6);
  ASSERT_TRUE(shortlist.ok()) << shortlist.status();
  size_t largest = 0;
  ASSERT_TRUE(ForEachTokenizedTrainingPair(
                  data, *tokenizer,
                  [&](int64_t index, const Example& example) -> absl::Status {
                    const std::vector<int32_t> candidates =
                        shortlist->Candidates(example.source, {tokenizer->eos_id()});
                    largest = std::max(largest, candidates.size());
                    for (const int token : example.target) {
                      EXPECT_TRUE(std::binary_search(candidates.begin(), candidates.end(), token))
                          << "pair " << index << " token " << token;
                    }
                    return absl::OkStatus();
                  },
                  nullptr)
                  .ok());
  EXPECT_LT(largest, static_cast<size_t>(tokenizer->vocab_size()) * 3 / 4);
}

}  // namespace
}  // namespace tfm
