// The ensemble against members whose distributions are known functions of
// (source, prefix): every hypothesis' log-probability must be the sum of the
// combined step distributions computed here, through beam reordering and
// batching, and a one-member ensemble must decode exactly as its member.
#include "runtime/decode/ensemble_model.h"

#include <cmath>
#include <limits>
#include <vector>

#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/scripted_model_testing.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using testing::kEos;
using testing::ScriptedModel;

std::vector<std::vector<int>> Sources() {
  return {{5, 6, 7}, {8}, {9, 4, 4, 5, 6}, {3, 3}, {7, 7, 7, 7}, {4, 9}};
}

SearchOptions Options(int beam, int nbest) {
  SearchOptions options;
  options.beam_size = beam;
  options.nbest = nbest;
  options.max_length_offset = 4;
  options.batch_size = 4;
  return options;
}

// The combined log-probability of `token` after `prefix`, in double.
double Combined(const std::vector<const ScriptedModel*>& members, const std::vector<int>& source,
                const std::vector<int>& prefix, int token, EnsembleCombination combination) {
  double sum = 0;
  for (const ScriptedModel* member : members) {
    const double l = member->LogProbs(source, prefix)[token];
    sum += combination == EnsembleCombination::kProbabilityMean ? std::exp(l) : l;
  }
  sum /= members.size();
  return combination == EnsembleCombination::kProbabilityMean ? std::log(sum) : sum;
}

double CombinedSequence(const std::vector<const ScriptedModel*>& members,
                        const std::vector<int>& source, const Hypothesis& h,
                        EnsembleCombination combination) {
  double total = 0;
  std::vector<int> prefix;
  for (int token : h.tokens) {
    total += Combined(members, source, prefix, token, combination);
    prefix.push_back(token);
  }
  if (h.ended) total += Combined(members, source, prefix, kEos, combination);
  return total;
}

TEST(EnsembleModelTest, CombinesElementwise) {
  const std::vector<float> a = {std::log(0.5f), std::log(0.25f),
                                -std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity()};
  const std::vector<float> b = {std::log(0.125f), std::log(0.25f), std::log(0.5f),
                                -std::numeric_limits<float>::infinity()};
  std::vector<Tensor> members = {*Tensor::FromVector<float>(a, {1, 4}),
                                 *Tensor::FromVector<float>(b, {1, 4})};
  Tensor out = *Tensor::Empty({1, 4}, DType::kF32);
  CombineLogProbabilities(members, EnsembleCombination::kProbabilityMean, &out);
  EXPECT_NEAR(out.span<float>()[0], std::log(0.3125f), 1e-6);
  EXPECT_NEAR(out.span<float>()[1], std::log(0.25f), 1e-6);
  EXPECT_NEAR(out.span<float>()[2], std::log(0.25f), 1e-6);  // One member rules it out.
  EXPECT_EQ(out.span<float>()[3], -std::numeric_limits<float>::infinity());
  CombineLogProbabilities(members, EnsembleCombination::kLogProbabilityMean, &out);
  EXPECT_NEAR(out.span<float>()[0], std::log(0.25f), 1e-6);  // sqrt(0.5 * 0.125).
  EXPECT_NEAR(out.span<float>()[1], std::log(0.25f), 1e-6);
  EXPECT_EQ(out.span<float>()[2], -std::numeric_limits<float>::infinity());
}

TEST(EnsembleModelTest, BeamScoresAreTheCombinedDistributions) {
  ScriptedModel first(/*vocab=*/9, /*eos_bias=*/0.8);
  ScriptedModel second(/*vocab=*/9, /*eos_bias=*/0.3, /*eos_shift=*/0.5);
  const std::vector<const ScriptedModel*> members = {&first, &second};
  const std::vector<std::vector<int>> sources = Sources();
  for (EnsembleCombination combination :
       {EnsembleCombination::kProbabilityMean, EnsembleCombination::kLogProbabilityMean}) {
    absl::StatusOr<std::unique_ptr<EnsembleModel>> ensemble =
        EnsembleModel::Create({&first, &second}, combination);
    ASSERT_TRUE(ensemble.ok()) << ensemble.status();
    BeamSearch search(Options(/*beam=*/4, /*nbest=*/3));
    absl::StatusOr<std::vector<NBestList>> results = search.Search(**ensemble, sources);
    ASSERT_TRUE(results.ok()) << results.status();
    ASSERT_EQ(results->size(), sources.size());
    bool differs_from_first = false;
    for (size_t s = 0; s < sources.size(); ++s) {
      ASSERT_EQ((*results)[s].size(), 3u);
      for (const Hypothesis& h : (*results)[s]) {
        EXPECT_NEAR(h.log_prob, CombinedSequence(members, sources[s], h, combination), 1e-4)
            << "sentence " << s;
        differs_from_first |=
            std::abs(h.log_prob - first.SequenceLogProb(sources[s], h.tokens, h.ended)) > 1e-3;
      }
    }
    EXPECT_TRUE(differs_from_first) << "the second member changed nothing";
  }
}

TEST(EnsembleModelTest, GreedyTakesTheCombinedArgmax) {
  ScriptedModel first(/*vocab=*/9, /*eos_bias=*/0.8);
  ScriptedModel second(/*vocab=*/9, /*eos_bias=*/0.3, /*eos_shift=*/0.5);
  const std::vector<const ScriptedModel*> members = {&first, &second};
  absl::StatusOr<std::unique_ptr<EnsembleModel>> ensemble =
      EnsembleModel::Create({&first, &second}, EnsembleCombination::kProbabilityMean);
  ASSERT_TRUE(ensemble.ok());
  const std::vector<std::vector<int>> sources = Sources();
  GreedySearch search(Options(1, 1));
  absl::StatusOr<std::vector<NBestList>> results = search.Search(**ensemble, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t s = 0; s < sources.size(); ++s) {
    const Hypothesis& h = (*results)[s].front();
    std::vector<int> prefix;
    for (size_t t = 0; t <= h.tokens.size(); ++t) {
      int best = 0;
      for (int v = 1; v < 9; ++v) {
        if (Combined(members, sources[s], prefix, v, EnsembleCombination::kProbabilityMean) >
            Combined(members, sources[s], prefix, best, EnsembleCombination::kProbabilityMean)) {
          best = v;
        }
      }
      if (t == h.tokens.size()) {
        if (h.ended) {
          EXPECT_EQ(best, kEos) << "sentence " << s;
        }
      } else {
        EXPECT_EQ(h.tokens[t], best) << "sentence " << s << " step " << t;
        prefix.push_back(h.tokens[t]);
      }
    }
  }
}

TEST(EnsembleModelTest, OneMemberDecodesAsTheMember) {
  ScriptedModel member(/*vocab=*/9, /*eos_bias=*/0.8);
  absl::StatusOr<std::unique_ptr<EnsembleModel>> ensemble =
      EnsembleModel::Create({&member}, EnsembleCombination::kProbabilityMean);
  ASSERT_TRUE(ensemble.ok());
  BeamSearch search(Options(/*beam=*/3, /*nbest=*/2));
  absl::StatusOr<std::vector<NBestList>> alone = search.Search(member, Sources());
  absl::StatusOr<std::vector<NBestList>> together = search.Search(**ensemble, Sources());
  ASSERT_TRUE(alone.ok() && together.ok());
  for (size_t s = 0; s < alone->size(); ++s) {
    ASSERT_EQ((*alone)[s].size(), (*together)[s].size());
    for (size_t i = 0; i < (*alone)[s].size(); ++i) {
      EXPECT_EQ((*alone)[s][i].tokens, (*together)[s][i].tokens);
      EXPECT_EQ((*alone)[s][i].log_prob, (*together)[s][i].log_prob);
    }
  }
}

TEST(EnsembleModelTest, MembersMustShareTheVocabulary) {
  ScriptedModel nine(/*vocab=*/9, 0.8), ten(/*vocab=*/10, 0.8);
  absl::StatusOr<std::unique_ptr<EnsembleModel>> ensemble =
      EnsembleModel::Create({&nine, &ten}, EnsembleCombination::kProbabilityMean);
  ASSERT_FALSE(ensemble.ok());
  EXPECT_NE(ensemble.status().message().find("member 2"), std::string::npos) << ensemble.status();
  EXPECT_FALSE(EnsembleModel::Create({}, EnsembleCombination::kProbabilityMean).ok());
}

}  // namespace
}  // namespace tfm
