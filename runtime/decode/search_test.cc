// The search strategies against a model whose distributions are a known
// function of (source, prefix), so every claim (scores, optimality, n-best
// order, lengths, batching) is checked against values computed here.
#include "runtime/decode/search.h"
#include "runtime/decode/search_testing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/scripted_model_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using testing::kBos;
using testing::kEos;
using testing::kPad;
using testing::ScriptedModel;

std::vector<std::vector<int>> Sources() {
  return {{5, 6, 7}, {8}, {9, 4, 4, 5, 6}, {3, 3}, {7, 7, 7, 7}, {4, 9}, {6}};
}

SearchOptions Options(int beam, int nbest = 1, double alpha = 0.6, int offset = 5) {
  SearchOptions options;
  options.beam_size = beam;
  options.nbest = nbest;
  options.length_penalty_alpha = alpha;
  options.max_length_offset = offset;
  options.batch_size = 3;
  return options;
}

TEST(SearchTest, ScoresAreLogProbabilitiesOverTheLengthPenalty) {
  ScriptedModel model(/*vocab=*/9, /*eos_bias=*/0.8);
  const std::vector<std::vector<int>> sources = Sources();
  for (const SearchOptions& options : {Options(1), Options(4, 3), Options(3, 2, 1.0)}) {
    BeamSearch search(options);
    absl::StatusOr<std::vector<NBestList>> results = search.Search(model, sources);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_EQ(results->size(), sources.size());
    for (size_t s = 0; s < sources.size(); ++s) {
      const NBestList& list = (*results)[s];
      ASSERT_EQ(static_cast<int>(list.size()), options.nbest);
      for (size_t i = 0; i < list.size(); ++i) {
        const Hypothesis& h = list[i];
        const int steps = static_cast<int>(h.tokens.size()) + (h.ended ? 1 : 0);
        EXPECT_NEAR(h.log_prob, model.SequenceLogProb(sources[s], h.tokens, h.ended), 1e-5);
        EXPECT_NEAR(h.score,
                    h.log_prob / std::pow((5.0 + steps) / 6.0, options.length_penalty_alpha),
                    1e-12);
        EXPECT_LE(steps, static_cast<int>(sources[s].size()) + options.max_length_offset);
        for (int token : h.tokens) EXPECT_NE(token, kEos);
        if (i > 0) {
          EXPECT_GE(list[i - 1].score, h.score) << "n-best not sorted";
          EXPECT_NE(list[i - 1].tokens, h.tokens) << "duplicate hypothesis";
        }
      }
    }
  }
}

TEST(SearchTest, BeamOfOneIsGreedy) {
  ScriptedModel model(/*vocab=*/11, /*eos_bias=*/0.5);
  const std::vector<std::vector<int>> sources = Sources();
  for (double alpha : {0.0, 0.6, 2.0}) {
    absl::StatusOr<std::vector<NBestList>> beam =
        BeamSearch(Options(1, 1, alpha)).Search(model, sources);
    absl::StatusOr<std::vector<NBestList>> greedy =
        GreedySearch(Options(1, 1, alpha)).Search(model, sources);
    ASSERT_TRUE(beam.ok() && greedy.ok());
    for (size_t s = 0; s < sources.size(); ++s) {
      EXPECT_EQ((*beam)[s][0].tokens, (*greedy)[s][0].tokens) << s;
      EXPECT_EQ((*beam)[s][0].log_prob, (*greedy)[s][0].log_prob) << s;
      EXPECT_EQ((*beam)[s][0].score, (*greedy)[s][0].score) << s;
      EXPECT_EQ((*beam)[s][0].ended, (*greedy)[s][0].ended) << s;
    }
  }
}

// Every output of at most max_length steps, enumerated.
void Enumerate(const ScriptedModel& model, const std::vector<int>& source, int max_length,
               double alpha, LengthPenaltyKind kind, std::vector<int>& prefix, double log_prob,
               Hypothesis& best) {
  const std::vector<double> p = model.LogProbs(source, prefix);
  const int steps = static_cast<int>(prefix.size()) + 1;
  const auto consider = [&](bool ended, double total) {
    Hypothesis h{prefix, total, total / LengthPenalty(steps, alpha, kind), ended};
    if (best.tokens.empty() && !best.ended ? true : BetterHypothesis(h, best)) best = h;
  };
  consider(true, log_prob + p[kEos]);
  for (int v = 0; v < static_cast<int>(p.size()); ++v) {
    if (v == kEos) continue;
    prefix.push_back(v);
    if (steps == max_length) {
      consider(false, log_prob + p[v]);
    } else {
      Enumerate(model, source, max_length, alpha, kind, prefix, log_prob + p[v], best);
    }
    prefix.pop_back();
  }
}

// With a beam wide enough to hold every prefix, the search is exhaustive, so
// its best must be the best output of all: this checks the early stop
// (the bound must never cut off a better hypothesis), under either length
// penalty.
TEST(SearchTest, WideBeamFindsTheBestOutput) {
  ScriptedModel model(/*vocab=*/5, /*eos_bias=*/0.3);
  const std::vector<std::vector<int>> sources = {{3}, {4}, {3, 4}};
  for (LengthPenaltyKind kind : {config::DecodeConfig::GNMT, config::DecodeConfig::POWER}) {
    for (double alpha : {0.0, 0.6, 1.5}) {
      // Outputs of up to 3 steps: at most 4 * 4 live prefixes, 4 * 4 * 5 candidates.
      SearchOptions options = Options(/*beam=*/64, 1, alpha, /*offset=*/2);
      options.length_penalty = kind;
      absl::StatusOr<std::vector<NBestList>> results =
          BeamSearch(options).Search(model, {sources[0], sources[1]});
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t s = 0; s < 2; ++s) {
        Hypothesis best;
        std::vector<int> prefix;
        Enumerate(model, sources[s], 3, alpha, kind, prefix, 0.0, best);
        EXPECT_EQ((*results)[s][0].tokens, best.tokens) << alpha << LengthPenaltyKindName(kind);
        EXPECT_NEAR((*results)[s][0].score, best.score, 1e-5) << alpha;
      }
    }
  }
}

TEST(SearchTest, BeamBeatsOrTiesGreedyOnScore) {
  ScriptedModel model(/*vocab=*/11, /*eos_bias=*/0.5);
  const std::vector<std::vector<int>> sources = Sources();
  auto beam = BeamSearch(Options(6, 1, 0.0)).Search(model, sources);
  auto greedy = GreedySearch(Options(1, 1, 0.0)).Search(model, sources);
  ASSERT_TRUE(beam.ok() && greedy.ok());
  int better = 0;
  for (size_t s = 0; s < sources.size(); ++s) {
    EXPECT_GE((*beam)[s][0].score, (*greedy)[s][0].score - 1e-9);
    better += (*beam)[s][0].score > (*greedy)[s][0].score + 1e-9;
  }
  EXPECT_GT(better, 0) << "the scripted model should give beam search something to find";
}

TEST(SearchTest, EmptySourceGivesEmptyOutputWithoutTheModel) {
  ScriptedModel model(9, 0.8);
  const std::vector<std::vector<int>> sources = {{}, {5, 6}, {}};
  for (int beam : {1, 4}) {
    std::unique_ptr<SearchStrategy> search =
        testing::SearchForBeamSize(beam == 1 ? Options(1) : Options(beam, 2));
    absl::StatusOr<std::vector<NBestList>> results = search->Search(model, sources);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t s : {0, 2}) {
      ASSERT_EQ((*results)[s].size(), 1u);
      EXPECT_TRUE((*results)[s][0].tokens.empty());
      EXPECT_EQ((*results)[s][0].log_prob, 0.0);
    }
    EXPECT_FALSE((*results)[1].empty());
  }
  const int starts = model.starts;
  ASSERT_TRUE(BeamSearch(Options(4)).Search(model, {{}, {}}).ok());
  EXPECT_EQ(model.starts, starts);
}

TEST(SearchTest, MaximumLengthIsHonoured) {
  ScriptedModel model(/*vocab=*/9, /*eos_bias=*/0, /*eos_shift=*/-100);  // eos never wins.
  const std::vector<std::vector<int>> sources = Sources();
  for (int offset : {0, 3}) {
    for (int beam : {1, 3}) {
      SearchOptions options = Options(beam, 1, 0.6, offset);
      std::unique_ptr<SearchStrategy> search = testing::SearchForBeamSize(options);
      absl::StatusOr<std::vector<NBestList>> results = search->Search(model, sources);
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t s = 0; s < sources.size(); ++s) {
        EXPECT_EQ((*results)[s][0].tokens.size(), sources[s].size() + offset);
        EXPECT_FALSE((*results)[s][0].ended);
      }
    }
  }
}

// ignore_eos: every output runs to the maximum length, even where eos is
// by far the likeliest token, and its log-probability sums the non-eos
// tokens it took (eos's mass is not renormalised away).
TEST(SearchTest, IgnoreEosDecodesToTheMaximumLength) {
  ScriptedModel model(/*vocab=*/9, /*eos_bias=*/0, /*eos_shift=*/100);  // eos always wins.
  const std::vector<std::vector<int>> sources = Sources();
  for (int beam : {1, 3}) {
    SearchOptions options = Options(beam, 1, 0.6, /*offset=*/4);
    options.ignore_eos = true;
    std::unique_ptr<SearchStrategy> search = testing::SearchForBeamSize(options);
    absl::StatusOr<std::vector<NBestList>> results = search->Search(model, sources);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t s = 0; s < sources.size(); ++s) {
      const Hypothesis& best = (*results)[s][0];
      EXPECT_EQ(best.tokens.size(), sources[s].size() + 4) << "beam " << beam << ", source " << s;
      EXPECT_FALSE(best.ended);
      for (int token : best.tokens) EXPECT_NE(token, kEos);
      EXPECT_NEAR(best.log_prob, model.SequenceLogProb(sources[s], best.tokens, false), 1e-5);
    }
    // Without the option the same model ends every output at once.
    options.ignore_eos = false;
    absl::StatusOr<std::vector<NBestList>> ending = BeamSearch(options).Search(model, sources);
    ASSERT_TRUE(ending.ok()) << ending.status();
    for (const NBestList& list : *ending) EXPECT_TRUE(list[0].tokens.empty());
  }
}

// Results do not depend on how sentences are batched (the scripted model is
// exact; the Transformer's version of this is tests/decoding_test.cc).
TEST(SearchTest, ResultsDoNotDependOnBatching) {
  ScriptedModel model(11, 0.5);
  const std::vector<std::vector<int>> sources = Sources();
  for (int beam : {1, 4}) {
    std::vector<std::vector<NBestList>> runs;
    for (int batch_size : {1, 2, 64}) {
      SearchOptions options = Options(beam, beam == 1 ? 1 : 2);
      options.batch_size = batch_size;
      absl::StatusOr<std::vector<NBestList>> results = BeamSearch(options).Search(model, sources);
      ASSERT_TRUE(results.ok()) << results.status();
      runs.push_back(*results);
    }
    for (size_t run = 1; run < runs.size(); ++run) {
      for (size_t s = 0; s < sources.size(); ++s) {
        ASSERT_EQ(runs[run][s].size(), runs[0][s].size());
        for (size_t i = 0; i < runs[0][s].size(); ++i) {
          EXPECT_EQ(runs[run][s][i].tokens, runs[0][s][i].tokens);
          EXPECT_EQ(runs[run][s][i].score, runs[0][s][i].score);
        }
      }
    }
  }
}

// A token budget (source tokens x beam) cuts the length-sorted sentences
// where the next one would overflow it; batch_size still caps the count,
// and a sentence over the budget is a batch of its own.
TEST(SearchTest, BatchesByLengthKeepATokenBudget) {
  using Batches = std::vector<std::pair<size_t, size_t>>;
  const std::vector<int> lengths = {1, 2, 2, 3, 5, 9};
  EXPECT_EQ(BatchesByLength(lengths, 64, 0, 4), (Batches{{0, 6}}));
  EXPECT_EQ(BatchesByLength(lengths, 4, 0, 4), (Batches{{0, 4}, {4, 6}}));
  // Beam 2, 12 tokens: {1,2,2} pads to 3 x 2 x 2 = 12; {3} + {5} = 2 x 5 x 2
  // = 20 > 12; 5 x 2 = 10 alone; 9 x 2 = 18 over the budget, alone.
  EXPECT_EQ(BatchesByLength(lengths, 64, 12, 2), (Batches{{0, 3}, {3, 4}, {4, 5}, {5, 6}}));
  EXPECT_EQ(BatchesByLength(lengths, 2, 12, 2), (Batches{{0, 2}, {2, 4}, {4, 5}, {5, 6}}));
  EXPECT_TRUE(BatchesByLength({}, 64, 12, 2).empty());
}

// Batching by a token budget gives the outputs of batching by count, in
// input order.
TEST(SearchTest, TokenBudgetBatchingGivesTheSameResults) {
  ScriptedModel model(11, 0.5);
  const std::vector<std::vector<int>> sources = Sources();
  for (int beam : {1, 4}) {
    SearchOptions by_count = Options(beam, 1);
    by_count.batch_size = 64;
    absl::StatusOr<std::vector<NBestList>> expected = BeamSearch(by_count).Search(model, sources);
    ASSERT_TRUE(expected.ok()) << expected.status();
    for (int64_t max_tokens : {1, 8, 20, 1000}) {
      SearchOptions by_tokens = by_count;
      by_tokens.max_tokens = max_tokens;
      absl::StatusOr<std::vector<NBestList>> results = BeamSearch(by_tokens).Search(model, sources);
      ASSERT_TRUE(results.ok()) << results.status();
      for (size_t s = 0; s < sources.size(); ++s) {
        ASSERT_EQ((*results)[s].size(), (*expected)[s].size()) << max_tokens;
        EXPECT_EQ((*results)[s][0].tokens, (*expected)[s][0].tokens) << max_tokens << " " << s;
        EXPECT_EQ((*results)[s][0].score, (*expected)[s][0].score) << max_tokens << " " << s;
      }
    }
  }
}

TEST(SearchTest, StrategyAndOptionsFromTheConfig) {
  config::DecodeConfig decode;
  absl::StatusOr<std::unique_ptr<SearchStrategy>> beam = CreateSearchStrategy(decode);
  ASSERT_TRUE(beam.ok()) << beam.status();
  EXPECT_NE(dynamic_cast<BeamSearch*>(beam->get()), nullptr);
  EXPECT_EQ((*beam)->options().beam_size, 4);
  EXPECT_DOUBLE_EQ((*beam)->options().length_penalty_alpha, 0.6f);
  EXPECT_EQ((*beam)->options().max_length_offset, 50);
  EXPECT_EQ((*beam)->options().nbest, 1);
  EXPECT_EQ((*beam)->options().max_tokens, 0);
  decode.set_strategy(config::DecodeConfig::GREEDY);
  absl::StatusOr<std::unique_ptr<SearchStrategy>> greedy = CreateSearchStrategy(decode);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_NE(dynamic_cast<GreedySearch*>(greedy->get()), nullptr);
  decode.set_nbest(2);
  EXPECT_EQ(CreateSearchStrategy(decode).status().code(), absl::StatusCode::kInvalidArgument);
  decode.set_strategy(config::DecodeConfig::BEAM);
  decode.set_nbest(5);
  const absl::Status too_many = CreateSearchStrategy(decode).status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  // Named as the flags name it.
  EXPECT_NE(too_many.message().find("nbest 5 (--nbest or decode.nbest) exceeds the 4 hypotheses"),
            std::string::npos)
      << too_many;
}

}  // namespace
}  // namespace tfm
