// The two length penalties' values, their names and config field, and a beam
// search scoring with the power one (the optimality of the search under each
// kind is search_test's WideBeamFindsTheBestOutput).
#include "runtime/decode/length_penalty.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/decode/beam_search.h"
#include "runtime/decode/scripted_model_testing.h"
#include "runtime/decode/search.h"

namespace tfm {
namespace {

TEST(LengthPenaltyTest, GnmtIsWuEtAlsFormula) {
  EXPECT_DOUBLE_EQ(LengthPenalty(1, 0.6), 1.0);  // (5 + 1) / 6 = 1.
  EXPECT_DOUBLE_EQ(LengthPenalty(7, 0.6, config::DecodeConfig::GNMT), std::pow(2.0, 0.6));
  EXPECT_DOUBLE_EQ(LengthPenalty(0, 1.0, config::DecodeConfig::GNMT), 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(LengthPenalty(19, 0.0, config::DecodeConfig::GNMT), 1.0);
}

TEST(LengthPenaltyTest, PowerIsStepsToTheAlpha) {
  EXPECT_DOUBLE_EQ(LengthPenalty(1, 0.6, config::DecodeConfig::POWER), 1.0);
  EXPECT_DOUBLE_EQ(LengthPenalty(20, 0.6, config::DecodeConfig::POWER), std::pow(20.0, 0.6));
  EXPECT_DOUBLE_EQ(LengthPenalty(9, 0.5, config::DecodeConfig::POWER), 3.0);
  EXPECT_DOUBLE_EQ(LengthPenalty(19, 0.0, config::DecodeConfig::POWER), 1.0);
  // No step taken (an empty source's empty output): 1, not 0^alpha = 0.
  EXPECT_DOUBLE_EQ(LengthPenalty(0, 0.6, config::DecodeConfig::POWER), 1.0);
  // It favours longer outputs more than GNMT's at the same alpha: the
  // reason CTranslate2's and our translations differed on a few lines.
  EXPECT_GT(LengthPenalty(21, 0.6, config::DecodeConfig::POWER) /
                LengthPenalty(20, 0.6, config::DecodeConfig::POWER),
            LengthPenalty(21, 0.6) / LengthPenalty(20, 0.6));
}

TEST(LengthPenaltyTest, NamesAndConfig) {
  for (LengthPenaltyKind kind : {config::DecodeConfig::GNMT, config::DecodeConfig::POWER}) {
    absl::StatusOr<LengthPenaltyKind> parsed = ParseLengthPenaltyKind(LengthPenaltyKindName(kind));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, kind);
  }
  const absl::StatusOr<LengthPenaltyKind> bad = ParseLengthPenaltyKind("fairseq");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'fairseq'"), absl::string_view::npos);
  EXPECT_NE(bad.status().message().find("gnmt"), absl::string_view::npos);
  EXPECT_NE(bad.status().message().find("power"), absl::string_view::npos);

  config::DecodeConfig decode;
  EXPECT_EQ(SearchOptions::FromConfig(decode).length_penalty, config::DecodeConfig::GNMT);
  decode.set_length_penalty_kind(config::DecodeConfig::POWER);
  EXPECT_EQ(SearchOptions::FromConfig(decode).length_penalty, config::DecodeConfig::POWER);
}

TEST(LengthPenaltyTest, BeamSearchScoresWithThePowerPenalty) {
  testing::ScriptedModel model(/*vocab=*/9, /*eos_bias=*/0.8);
  const std::vector<std::vector<int>> sources = {{5, 6, 7}, {8}, {9, 4, 4, 5, 6}, {3, 3}};
  SearchOptions options;
  options.beam_size = 4;
  options.nbest = 3;
  options.max_length_offset = 5;
  options.length_penalty = config::DecodeConfig::POWER;
  absl::StatusOr<std::vector<NBestList>> results = BeamSearch(options).Search(model, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t s = 0; s < sources.size(); ++s) {
    ASSERT_EQ((*results)[s].size(), 3u);
    for (const Hypothesis& h : (*results)[s]) {
      const int steps = static_cast<int>(h.tokens.size()) + (h.ended ? 1 : 0);
      EXPECT_NEAR(h.log_prob, model.SequenceLogProb(sources[s], h.tokens, h.ended), 1e-5);
      EXPECT_NEAR(h.score, h.log_prob / std::pow(steps, 0.6), 1e-12);
    }
  }
}

}  // namespace
}  // namespace tfm
