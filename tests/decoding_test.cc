// Search strategies over a real Transformer: a tiny model trained for 300
// updates (a few seconds) on a toy task (reverse the source,
// tests/util/reversal_model.h), so outputs are neither empty nor constant
// (60 updates still gave eos for everything).
// Then the search's contract: beam 1 is greedy, results do not depend on
// batching or padding, n-best lists are sorted and their scores are the
// model's own log-probabilities, lengths are bounded, and an empty source
// gives an empty output.
#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/search_testing.h"
#include "gtest/gtest.h"
#include "layers/transformer.h"
#include "tests/util/reversal_model.h"

namespace tfm {
namespace {

constexpr int kPad = testing::kReversalPad, kEos = testing::kReversalEos,
              kVocab = testing::kReversalVocab;
using testing::Reversal;

Batch MakeBatch(const std::vector<Example>& examples) {
  return testing::MakeReversalBatch(examples);
}

class DecodingTest : public ::testing::Test {
 protected:
  static constexpr int kUpdates = 300;

  static void SetUpTestSuite() {
    absl::StatusOr<testing::TrainedReversal> trained =
        testing::TrainReversalModel(kUpdates, /*init_seed=*/3);
    ASSERT_TRUE(trained.ok()) << trained.status();
    transformer_ = trained->model.release();
    initial_nll_ = trained->initial_nll;
    trained_nll_ = trained->trained_nll;
  }

  static void TearDownTestSuite() {
    delete transformer_;
    transformer_ = nullptr;
  }

  // Held-out sources of several lengths (each ends with eos).
  static std::vector<std::vector<int>> Sources(int count = 24) {
    std::vector<std::vector<int>> sources;
    for (int i = 0; i < count; ++i) sources.push_back(Reversal(200000 + i).source);
    return sources;
  }

  static SearchOptions Options(int beam, int nbest = 1, double alpha = 0.6) {
    SearchOptions options;
    options.beam_size = beam;
    options.nbest = nbest;
    options.length_penalty_alpha = alpha;
    options.max_length_offset = 4;
    options.batch_size = 7;
    return options;
  }

  // log p(tokens (+ eos) | source) from the whole-sequence forward.
  static double ModelLogProb(const std::vector<int>& source, const Hypothesis& h) {
    Example example{source, h.tokens};
    if (h.ended) example.target.push_back(kEos);
    const Batch batch = MakeBatch({example});
    const Tensor log_probs = *transformer_->LogProbabilities(batch);
    double total = 0;
    for (size_t t = 0; t < example.target.size(); ++t) {
      total += log_probs.data<float>()[t * kVocab + example.target[t]];
    }
    return total;
  }

  static Transformer* transformer_;
  static double initial_nll_, trained_nll_;
};

Transformer* DecodingTest::transformer_ = nullptr;
double DecodingTest::initial_nll_ = 0;
double DecodingTest::trained_nll_ = 0;

TEST_F(DecodingTest, TheToyModelLearnedAndSaysDifferentThings) {
  EXPECT_LT(trained_nll_, 0.8 * initial_nll_);
  const std::vector<std::vector<int>> sources = Sources();
  absl::StatusOr<std::vector<NBestList>> results =
      GreedySearch(Options(1)).Search(*transformer_, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  std::set<std::vector<int>> distinct;
  for (const NBestList& list : *results) {
    ASSERT_EQ(list.size(), 1u);
    distinct.insert(list[0].tokens);
  }
  EXPECT_GT(distinct.size(), sources.size() / 2);
}

TEST_F(DecodingTest, BeamOfOneIsGreedy) {
  const std::vector<std::vector<int>> sources = Sources();
  for (double alpha : {0.0, 0.6, 1.5}) {
    absl::StatusOr<std::vector<NBestList>> beam =
        BeamSearch(Options(1, 1, alpha)).Search(*transformer_, sources);
    absl::StatusOr<std::vector<NBestList>> greedy =
        GreedySearch(Options(1, 1, alpha)).Search(*transformer_, sources);
    ASSERT_TRUE(beam.ok()) << beam.status();
    ASSERT_TRUE(greedy.ok()) << greedy.status();
    for (size_t s = 0; s < sources.size(); ++s) {
      EXPECT_EQ((*beam)[s][0].tokens, (*greedy)[s][0].tokens) << s;
      EXPECT_EQ((*beam)[s][0].log_prob, (*greedy)[s][0].log_prob) << s;
      EXPECT_EQ((*beam)[s][0].score, (*greedy)[s][0].score) << s;
    }
  }
}

// A sentence alone, in batches of other sizes, and with extra padding
// columns gets the same hypotheses.
TEST_F(DecodingTest, OutputDoesNotDependOnTheBatchOrPadding) {
  const std::vector<std::vector<int>> sources = Sources(12);
  for (int beam : {1, 4}) {
    std::unique_ptr<SearchStrategy> search;
    SearchOptions options = Options(beam, beam == 1 ? 1 : 3);
    std::vector<std::vector<NBestList>> runs;
    for (int batch_size : {1, 5, 64}) {
      options.batch_size = batch_size;
      search = testing::SearchForBeamSize(options);
      absl::StatusOr<std::vector<NBestList>> results = search->Search(*transformer_, sources);
      ASSERT_TRUE(results.ok()) << results.status();
      runs.push_back(*results);
    }
    std::vector<NBestList> padded;
    for (const std::vector<int>& source : sources) {
      const std::vector<const std::vector<int>*> one = {&source};
      absl::StatusOr<std::vector<NBestList>> result =
          search->SearchBatch(*transformer_, PadSources(one, kPad, /*extra_columns=*/5));
      ASSERT_TRUE(result.ok()) << result.status();
      padded.push_back((*result)[0]);
    }
    runs.push_back(padded);
    for (size_t run = 1; run < runs.size(); ++run) {
      for (size_t s = 0; s < sources.size(); ++s) {
        ASSERT_EQ(runs[run][s].size(), runs[0][s].size()) << run << " " << s;
        for (size_t i = 0; i < runs[0][s].size(); ++i) {
          EXPECT_EQ(runs[run][s][i].tokens, runs[0][s][i].tokens) << run << " " << s;
          EXPECT_NEAR(runs[run][s][i].score, runs[0][s][i].score, 1e-5) << run << " " << s;
        }
      }
    }
  }
}

// Batches side by side (decode.inter_threads), each on one thread with its
// loops inline: the same hypotheses, bit for bit, as one batch at a time,
// in f32 and int8, greedy and beam; more threads than batches too.
TEST_F(DecodingTest, BatchesSideBySideGiveTheSameHypotheses) {
  ASSERT_TRUE(transformer_->SearchesBatchesSideBySide());
  const std::vector<std::vector<int>> sources = Sources(30);
  for (const DecodingPrecision precision : {DecodingPrecision::kF32, DecodingPrecision::kInt8}) {
    transformer_->set_decoding_precision(precision);
    for (int beam : {1, 4}) {
      SearchOptions options = Options(beam, beam == 1 ? 1 : 2);
      options.batch_size = 4;  // 8 batches.
      std::vector<std::vector<NBestList>> runs;
      for (int inter_threads : {1, 2, 3, 16}) {
        options.inter_threads = inter_threads;
        absl::StatusOr<std::vector<NBestList>> results =
            testing::SearchForBeamSize(options)->Search(*transformer_, sources);
        ASSERT_TRUE(results.ok()) << results.status();
        runs.push_back(*std::move(results));
      }
      for (size_t run = 1; run < runs.size(); ++run) {
        for (size_t s = 0; s < sources.size(); ++s) {
          ASSERT_EQ(runs[run][s].size(), runs[0][s].size()) << run << " " << s;
          for (size_t i = 0; i < runs[0][s].size(); ++i) {
            EXPECT_EQ(runs[run][s][i].tokens, runs[0][s][i].tokens) << run << " " << s;
            EXPECT_EQ(runs[run][s][i].score, runs[0][s][i].score) << run << " " << s;
          }
        }
      }
    }
  }
  transformer_->set_decoding_precision(DecodingPrecision::kF32);
}

TEST_F(DecodingTest, NBestIsSortedAndScoredByTheModel) {
  const std::vector<std::vector<int>> sources = Sources(10);
  const SearchOptions options = Options(/*beam=*/5, /*nbest=*/4);
  absl::StatusOr<std::vector<NBestList>> results =
      BeamSearch(options).Search(*transformer_, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t s = 0; s < sources.size(); ++s) {
    const NBestList& list = (*results)[s];
    ASSERT_EQ(list.size(), 4u);
    for (size_t i = 0; i < list.size(); ++i) {
      const Hypothesis& h = list[i];
      EXPECT_NEAR(h.log_prob, ModelLogProb(sources[s], h), 1e-4) << s << " " << i;
      const int steps = static_cast<int>(h.tokens.size()) + (h.ended ? 1 : 0);
      EXPECT_NEAR(h.score, h.log_prob / LengthPenalty(steps, options.length_penalty_alpha), 1e-12);
      if (i > 0) {
        EXPECT_GE(list[i - 1].score, h.score) << s;
        EXPECT_NE(list[i - 1].tokens, h.tokens) << s;
      }
    }
  }
}

TEST_F(DecodingTest, LengthsAreBoundedAndEmptySourcesGiveEmptyOutputs) {
  std::vector<std::vector<int>> sources = Sources(8);
  sources.insert(sources.begin() + 3, std::vector<int>());
  for (int offset : {0, 2}) {
    for (int beam : {1, 3}) {
      SearchOptions options = Options(beam);
      options.max_length_offset = offset;
      std::unique_ptr<SearchStrategy> search = testing::SearchForBeamSize(options);
      absl::StatusOr<std::vector<NBestList>> results = search->Search(*transformer_, sources);
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t s = 0; s < sources.size(); ++s) {
        const Hypothesis& best = (*results)[s][0];
        const int steps = static_cast<int>(best.tokens.size()) + (best.ended ? 1 : 0);
        EXPECT_LE(steps, static_cast<int>(sources[s].size()) + offset) << s;
      }
      EXPECT_TRUE((*results)[3][0].tokens.empty());
    }
  }
}

}  // namespace
}  // namespace tfm
