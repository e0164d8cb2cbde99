// The ensemble against members whose distributions are known functions of
// (source, prefix): every hypothesis' log-probability must be the sum of the
// combined step distributions computed here, through beam reordering and
// batching, and a one-member ensemble must decode exactly as its member.
#include "runtime/decode/ensemble_model.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "ops/ensemble_combine/ensemble_combine.h"
#include "runtime/decode/beam_search.h"
#include "runtime/decode/forwarding_model_testing.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/scripted_model_testing.h"

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

// A scripted model whose steps count as kept where it computed them
// (StepLogProbs): an ensemble of such members ranks through StepTopK.
class KeepsLogProbs : public testing::ForwardingModel {
 public:
  using ForwardingModel::ForwardingModel;
  bool HasStepLogProbs() const override { return true; }
  absl::StatusOr<Tensor> StepLogProbs(DecoderState& state, absl::Span<const int> last) override {
    return model_.Step(state, last);
  }
};

// More members than a device combines (kMaxEnsembleMembersCuda) go the
// host's way, which has no limit, instead of failing on a GPU.
TEST(EnsembleModelTest, MoreMembersThanADeviceCombinesTakeTheHostPath) {
  ScriptedModel model(/*vocab=*/9, /*eos_bias=*/0.8);
  KeepsLogProbs kept(model);
  std::vector<IncrementalModel*> members(kMaxEnsembleMembersCuda, &kept);
  absl::StatusOr<std::unique_ptr<EnsembleModel>> at_limit =
      EnsembleModel::Create(members, EnsembleCombination::kProbabilityMean);
  members.push_back(&kept);
  absl::StatusOr<std::unique_ptr<EnsembleModel>> past_limit =
      EnsembleModel::Create(members, EnsembleCombination::kProbabilityMean);
  ASSERT_TRUE(at_limit.ok() && past_limit.ok());
  EXPECT_TRUE((*at_limit)->HasStepTopK());
  EXPECT_FALSE((*past_limit)->HasStepTopK());
  // Still an ensemble that decodes: its members agree, so it chooses what
  // one of them chooses.
  BeamSearch search(Options(/*beam=*/2, /*nbest=*/1));
  absl::StatusOr<std::vector<NBestList>> alone = search.Search(model, Sources());
  absl::StatusOr<std::vector<NBestList>> ensemble = search.Search(**past_limit, Sources());
  ASSERT_TRUE(alone.ok() && ensemble.ok()) << ensemble.status();
  ASSERT_EQ(alone->size(), ensemble->size());
  for (size_t s = 0; s < alone->size(); ++s) {
    EXPECT_EQ((*alone)[s].front().tokens, (*ensemble)[s].front().tokens) << "source " << s;
  }
}

// An ensemble whose members keep their steps combines and ranks them there
// (StepTopK), and chooses exactly what combining the members' host
// distributions and ranking on the host chooses: the same n-best lists and
// scores, for both combinations, greedy and beam.
TEST(EnsembleModelTest, RankingTheCombinedStepWhereItIsEqualsTheHostPath) {
  ScriptedModel first(/*vocab=*/9, /*eos_bias=*/0.8);
  ScriptedModel second(/*vocab=*/9, /*eos_bias=*/0.3, /*eos_shift=*/0.5);
  KeepsLogProbs first_kept(first), second_kept(second);
  for (EnsembleCombination combination :
       {EnsembleCombination::kProbabilityMean, EnsembleCombination::kLogProbabilityMean}) {
    absl::StatusOr<std::unique_ptr<EnsembleModel>> on_host =
        EnsembleModel::Create({&first, &second}, combination);
    absl::StatusOr<std::unique_ptr<EnsembleModel>> kept =
        EnsembleModel::Create({&first_kept, &second_kept}, combination);
    ASSERT_TRUE(on_host.ok() && kept.ok());
    EXPECT_FALSE((*on_host)->HasStepTopK());
    ASSERT_TRUE((*kept)->HasStepTopK());
    for (const int beam : {1, 4}) {
      SearchOptions options = Options(beam, beam > 1 ? 3 : 1);
      std::unique_ptr<SearchStrategy> search;
      if (beam == 1) {
        search = std::make_unique<GreedySearch>(options);
      } else {
        search = std::make_unique<BeamSearch>(options);
      }
      absl::StatusOr<std::vector<NBestList>> a = search->Search(**on_host, Sources());
      absl::StatusOr<std::vector<NBestList>> b = search->Search(**kept, Sources());
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->size(), b->size());
      for (size_t s = 0; s < a->size(); ++s) {
        ASSERT_EQ((*a)[s].size(), (*b)[s].size()) << "source " << s;
        for (size_t i = 0; i < (*a)[s].size(); ++i) {
          EXPECT_EQ((*a)[s][i].tokens, (*b)[s][i].tokens) << "source " << s;
          EXPECT_EQ((*a)[s][i].score, (*b)[s][i].score) << "source " << s;
        }
      }
    }
  }
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
