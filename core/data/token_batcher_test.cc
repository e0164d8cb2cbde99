#include "core/data/token_batcher.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/data/aligned_text_reader.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

void PrintTo(const BatchPosition& p, std::ostream* os) {
  *os << "{epoch " << p.epoch << ", pairs " << p.pairs << ", batch " << p.batch << "}";
}

class VectorPairReader : public PairReader {
 public:
  explicit VectorPairReader(const std::vector<SentencePair>* pairs) : pairs_(pairs) {}
  absl::StatusOr<bool> Next(SentencePair* pair) override {
    if (next_ == pairs_->size()) return false;
    *pair = (*pairs_)[next_++];
    return true;
  }
  const SkipReport& skips() const override { return skips_; }

 private:
  const std::vector<SentencePair>* pairs_;
  size_t next_ = 0;
  SkipReport skips_;
};

// Pair i: source "i w w ..." and target "i w ..." of pseudo-random lengths;
// the toy tokenizer maps each word to one id (the first word's id is i + 10,
// so every row names its pair) and appends eos = 1.
std::vector<SentencePair> ToyCorpus(int n) {
  std::vector<SentencePair> pairs;
  for (int i = 0; i < n; ++i) {
    const int source_words = 1 + (i * 7919) % 37;
    const int target_words = std::max(1, source_words + (i * 31) % 9 - 4);
    std::string source = std::to_string(i), target = std::to_string(i);
    for (int w = 1; w < source_words; ++w) absl::StrAppend(&source, " w");
    for (int w = 1; w < target_words; ++w) absl::StrAppend(&target, " w");
    pairs.push_back({source, target});
  }
  return pairs;
}

Example ToyTokenize(const SentencePair& pair) {
  Example example;
  for (const std::string* side : {&pair.source, &pair.target}) {
    std::vector<int>& ids = side == &pair.source ? example.source : example.target;
    for (absl::string_view word : absl::StrSplit(*side, ' ')) {
      ids.push_back(word == "w" ? 5 : 10 + std::stoi(std::string(word)));
    }
    ids.push_back(1);
  }
  return example;
}

config::BatchingConfig ToyConfig() {
  config::BatchingConfig config;
  config.set_max_source_tokens(200);
  config.set_max_target_tokens(220);
  config.set_max_length(30);
  config.set_min_length(3);
  config.set_shuffle_buffer(150);
  config.set_shuffle_seed(42);
  return config;
}

TokenBatcher ToyBatcher(const std::vector<SentencePair>* pairs, const config::BatchingConfig& config) {
  return TokenBatcher(
      config,
      [pairs]() -> absl::StatusOr<std::unique_ptr<PairReader>> {
        return std::make_unique<VectorPairReader>(pairs);
      },
      ToyTokenize, /*pad_id=*/0);
}

// The pair index of each row (its first source id minus 10).
std::vector<int> RowIds(const Batch& batch) {
  std::vector<int> ids;
  for (int r = 0; r < batch.size; ++r) ids.push_back(batch.source[r * batch.source_length] - 10);
  return ids;
}

std::vector<Batch> Epoch(TokenBatcher* batcher) {
  std::vector<Batch> batches;
  Batch batch;
  while (true) {
    auto more = batcher->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return batches;
    batches.push_back(batch);
  }
}

TEST(TokenBatcherTest, BatchesRespectBudgetsAndCoverEveryKeptPairOnce) {
  const auto pairs = ToyCorpus(1000);
  const config::BatchingConfig config = ToyConfig();
  TokenBatcher batcher = ToyBatcher(&pairs, config);
  const std::vector<Batch> batches = Epoch(&batcher);
  std::multiset<int> seen;
  for (const Batch& batch : batches) {
    EXPECT_LE(batch.size * batch.source_length, config.max_source_tokens());
    EXPECT_LE(batch.size * batch.target_length, config.max_target_tokens());
    for (int r = 0; r < batch.size; ++r) {
      const int id = RowIds(batch)[r];
      const Example expected = ToyTokenize(pairs[id]);
      ASSERT_EQ(batch.source_lengths[r], static_cast<int>(expected.source.size()));
      // Row contents then padding.
      for (int c = 0; c < batch.source_length; ++c) {
        const int want = c < batch.source_lengths[r] ? expected.source[c] : 0;
        ASSERT_EQ(batch.source[r * batch.source_length + c], want);
      }
      for (int c = 0; c < batch.target_length; ++c) {
        const int want = c < batch.target_lengths[r] ? expected.target[c] : 0;
        ASSERT_EQ(batch.target[r * batch.target_length + c], want);
      }
    }
    for (int id : RowIds(batch)) seen.insert(id);
  }
  int kept = 0;
  const SkipReport skips = batcher.skips();
  for (int i = 0; i < 1000; ++i) {
    const Example e = ToyTokenize(pairs[i]);
    const bool keep = std::max(e.source.size(), e.target.size()) <= 30 &&
                      std::min(e.source.size(), e.target.size()) >= 3;
    EXPECT_EQ(seen.count(i), keep ? 1u : 0u) << "pair " << i;
    kept += keep;
  }
  EXPECT_EQ(static_cast<int>(seen.size()), kept);
  EXPECT_EQ(skips.count(kSkipTooManyTokens) + skips.count(kSkipTooFewTokens), 1000 - kept);
  EXPECT_GT(skips.count(kSkipTooManyTokens), 0);
  EXPECT_GT(skips.count(kSkipTooFewTokens), 0);
  EXPECT_EQ(batcher.stats().examples, kept);
  EXPECT_EQ(batcher.position(), (BatchPosition{1, 0, 0}));
}

TEST(TokenBatcherTest, WindowsBoundMemoryAndShuffleWithinThemselves) {
  const auto pairs = ToyCorpus(1000);
  TokenBatcher batcher = ToyBatcher(&pairs, ToyConfig());
  int window = 0;
  int last_window = 0;
  for (const Batch& batch : Epoch(&batcher)) {
    const auto ids = RowIds(batch);
    window = ids[0] / 150;
    for (int id : ids) EXPECT_EQ(id / 150, window) << "a batch mixes windows";
    EXPECT_GE(window, last_window) << "windows come in corpus order";
    last_window = window;
  }
}

std::vector<std::vector<int>> Order(const std::vector<Batch>& batches) {
  std::vector<std::vector<int>> order;
  for (const Batch& batch : batches) order.push_back(RowIds(batch));
  return order;
}

TEST(TokenBatcherTest, OrderIsDeterministicPerSeedAndChangesPerEpoch) {
  const auto pairs = ToyCorpus(1000);
  TokenBatcher a = ToyBatcher(&pairs, ToyConfig());
  TokenBatcher b = ToyBatcher(&pairs, ToyConfig());
  const auto a0 = Order(Epoch(&a)), b0 = Order(Epoch(&b));
  EXPECT_EQ(a0, b0);
  const auto a1 = Order(Epoch(&a));
  EXPECT_NE(a0, a1);
  EXPECT_EQ(a1, Order(Epoch(&b)));
  config::BatchingConfig other_seed = ToyConfig();
  other_seed.set_shuffle_seed(43);
  TokenBatcher c = ToyBatcher(&pairs, other_seed);
  EXPECT_NE(Order(Epoch(&c)), a0);
}

TEST(TokenBatcherTest, SeekResumesTheExactSequence) {
  const auto pairs = ToyCorpus(1000);
  TokenBatcher reference = ToyBatcher(&pairs, ToyConfig());
  // Record (position before, batch) for two epochs and a bit.
  std::vector<std::pair<BatchPosition, std::vector<int>>> sequence;
  Batch batch;
  for (int epoch_ends = 0; epoch_ends < 2;) {
    const BatchPosition before = reference.position();
    auto more = reference.Next(&batch);
    ASSERT_TRUE(more.ok());
    if (!*more) {
      ++epoch_ends;
      continue;
    }
    sequence.push_back({before, RowIds(batch)});
  }
  ASSERT_GT(sequence.size(), 40u);
  // Resume from several points: a window start, mid-window, the last batch.
  for (size_t start : {size_t{0}, size_t{1}, size_t{7}, sequence.size() / 2 + 3,
                       sequence.size() - 1}) {
    TokenBatcher resumed = ToyBatcher(&pairs, ToyConfig());
    resumed.Seek(sequence[start].first);
    for (size_t i = start; i < sequence.size(); ++i) {
      if (!(resumed.position() == sequence[i].first)) {
        // Only an epoch's end lies between two recorded batches.
        auto more = resumed.Next(&batch);
        ASSERT_TRUE(more.ok() && !*more) << "at " << i;
      }
      ASSERT_EQ(resumed.position(), sequence[i].first) << "at " << i;
      auto more = resumed.Next(&batch);
      ASSERT_TRUE(more.ok() && *more);
      ASSERT_EQ(RowIds(batch), sequence[i].second) << "resumed from " << start << " at " << i;
    }
  }
}

// A pair its tokens' lengths reject is reported by its file and line, where
// the reader knows them (a text corpus), not by its place in the stream.
TEST(TokenBatcherTest, LengthRejectionsNameFileAndLine) {
  const std::vector<SentencePair> pairs = ToyCorpus(60);
  const std::string source_path = absl::StrCat(::testing::TempDir(), "/batcher_lines.src");
  const std::string target_path = absl::StrCat(::testing::TempDir(), "/batcher_lines.tgt");
  {
    std::ofstream source(source_path), target(target_path);
    for (const SentencePair& pair : pairs) {
      source << pair.source << "\n";
      target << pair.target << "\n";
    }
  }
  TokenBatcher batcher(
      ToyConfig(),
      [&]() -> absl::StatusOr<std::unique_ptr<PairReader>> {
        return AlignedTextReader::Open(source_path, target_path);
      },
      ToyTokenize, /*pad_id=*/0);
  Epoch(&batcher);
  // The first pairs too long and too short, 1-based lines.
  int too_long = -1, too_short = -1;
  for (int i = 0; i < static_cast<int>(pairs.size()); ++i) {
    const Example e = ToyTokenize(pairs[i]);
    if (too_long < 0 && std::max(e.source.size(), e.target.size()) > 30) too_long = i;
    if (too_short < 0 && std::min(e.source.size(), e.target.size()) < 3) too_short = i;
  }
  ASSERT_GE(too_long, 0);
  ASSERT_GE(too_short, 0);
  const std::string summary = batcher.skips().Summary();
  EXPECT_NE(summary.find(absl::StrCat(source_path, ":", too_long + 1)), std::string::npos)
      << summary;
  EXPECT_NE(summary.find(absl::StrCat(source_path, ":", too_short + 1)), std::string::npos)
      << summary;
  EXPECT_EQ(summary.find("epoch 0 pair"), std::string::npos) << summary;
}

TEST(TokenBatcherTest, CorpusErrorsPropagate) {
  TokenBatcher batcher(
      ToyConfig(),
      []() -> absl::StatusOr<std::unique_ptr<PairReader>> {
        return absl::NotFoundError("cannot open /no/corpus.en");
      },
      ToyTokenize, 0);
  Batch batch;
  auto more = batcher.Next(&batch);
  ASSERT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("/no/corpus.en"), std::string::npos);
}

// The paper's setting on real data: a shared BPE vocabulary (8000, trained
// here on a deterministic subset: every third pair of Multi30k train) and
// token-budget batches of about 25k source + 25k target tokens.
TEST(TokenBatcherMulti30kTest, PaddingWasteUnderTenPercent) {
  auto open = []() -> absl::StatusOr<std::unique_ptr<PairReader>> {
    auto reader = AlignedTextReader::Open(SharedDataPath("multi30k/train.en.gz"),
                                          SharedDataPath("multi30k/train.de.gz"));
    if (!reader.ok()) return reader.status();
    return std::unique_ptr<PairReader>(*std::move(reader));
  };
  config::TokenizerConfig tokenizer_config;
  tokenizer_config.set_vocab_size(8000);
  auto subset_reader = open();
  ASSERT_TRUE(subset_reader.ok()) << subset_reader.status();
  int64_t line = 0;
  SentencePair pair;
  bool target_pending = false;
  auto tokenizer = Tokenizer::Train(tokenizer_config, [&](std::string* sentence) -> absl::StatusOr<bool> {
    if (target_pending) {
      target_pending = false;
      *sentence = pair.target;
      return true;
    }
    while (true) {
      auto more = (*subset_reader)->Next(&pair);
      if (!more.ok() || !*more) return more;
      if (line++ % 3 == 0) break;
    }
    target_pending = true;
    *sentence = pair.source;
    return true;
  });
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();

  for (int budget : {25000, 4096}) {
    config::BatchingConfig config;  // Paper defaults: 25k tokens, max_length 256.
    config.set_max_source_tokens(budget);
    config.set_max_target_tokens(budget);
    TokenBatcher batcher(config, open, TokenBatcher::Tokenize(*tokenizer), tokenizer->pad_id());
    const std::vector<Batch> batches = Epoch(&batcher);
    const BatchStats& stats = batcher.stats();
    std::cout << "budget " << budget << ": " << stats.batches << " batches, " << stats.examples
              << " pairs, " << stats.source_tokens << " + " << stats.target_tokens
              << " tokens, padding waste " << 100.0 * stats.PaddingWaste() << "%; "
              << batcher.skips().Summary() << "\n";
    EXPECT_EQ(stats.examples + batcher.skips().total(), 29000);
    EXPECT_LT(stats.PaddingWaste(), 0.10) << "budget " << budget;
    for (const Batch& batch : batches) {
      EXPECT_LE(batch.size * batch.source_length, budget);
      EXPECT_LE(batch.size * batch.target_length, budget);
    }
  }
}

}  // namespace
}  // namespace tfm
