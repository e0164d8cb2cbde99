// Searches through IncrementalModel::StepTopK (each row's best tokens as a
// device ranks them, here the row_top_k op's CPU kernel) choose exactly what
// searches through Step choose: same tokens, same scores, bit for bit, with
// ties in the distributions (which take the fallback to the whole
// distribution only where a list cannot decide) and with ignore_eos.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bit_rows.h"
#include "core/status_macros.h"
#include "gtest/gtest.h"
#include "ops/row_top_k/row_top_k.h"
#include "runtime/decode/decoding_constraint.h"
#include "runtime/decode/forwarding_model_testing.h"
#include "runtime/decode/scripted_model_testing.h"
#include "runtime/decode/search_testing.h"

namespace tfm {
namespace {

using testing::ScriptedModel;

// The scripted model's log-probabilities rounded to multiples of `grid`
// (many ties when coarse; 0: not rounded), ranked by Step or by StepTopK.
// With kTiny, the first step's are rounded to integers and every later
// step's are ties made by the double sum's rounding (see Rounded).
constexpr float kTiny = -1.0f;
class RankedModel : public testing::ForwardingModel {
 public:
  RankedModel(ScriptedModel& model, float grid, bool ranks)
      : ForwardingModel(model), grid_(grid), ranks_(ranks) {}

  absl::StatusOr<Tensor> Step(DecoderState& state, absl::Span<const int> last) override {
    EXPECT_FALSE(ranks_) << "a search called Step on a model that ranks";
    return Rounded(state, last);
  }
  bool HasStepTopK() const override { return ranks_; }
  absl::StatusOr<StepTopTokens> StepTopK(DecoderState& state, absl::Span<const int> last, int count,
                                         int forbidden_token,
                                         absl::Span<const uint32_t> allowed) override {
    TFM_ASSIGN_OR_RETURN(Tensor all, Rounded(state, last));
    Tensor allowed_bits;
    if (!allowed.empty()) {
      TFM_ASSIGN_OR_RETURN(allowed_bits, BitRowsOnDevice(allowed, all.dim(0), Device::Cpu()));
    }
    TFM_ASSIGN_OR_RETURN(RowTopK ranked, RowTopKOf(all, count, forbidden_token, allowed_bits));
    TFM_ASSIGN_OR_RETURN(StepTopTokens top, StepTopTokensOf(ranked.values, ranked.columns));
    top.all_log_probs = [all, this]() -> absl::StatusOr<Tensor> {
      ++whole_distributions_;
      return all;
    };
    return top;
  }

 private:
  absl::StatusOr<Tensor> Rounded(DecoderState& state, absl::Span<const int> last) {
    const bool first_step = last.empty() || last[0] == testing::kBos;
    TFM_ASSIGN_OR_RETURN(Tensor log_probs, model_.Step(state, last));
    if (grid_ == kTiny && !first_step) {
      // Distinct floats whose sums with a row's log-probability (about -1
      // after the first step) round to the same double: the host ranks them
      // by token ascending, the device by value, here token descending.
      float* p = log_probs.data<float>();
      const int64_t vocab = log_probs.dim(1);
      for (int64_t i = 0; i < log_probs.num_elements(); ++i) {
        p[i] = -static_cast<float>(vocab - i % vocab) * 1e-20f;
      }
    } else if (grid_ != 0) {
      // kTiny: integers below 0, so that later sums with them round.
      const float grid = grid_ == kTiny ? 1.0f : grid_;
      const float shift = grid_ == kTiny ? -1.0f : 0.0f;
      float* p = log_probs.data<float>();
      for (int64_t i = 0; i < log_probs.num_elements(); ++i) {
        p[i] = std::round(p[i] / grid) * grid + shift;
      }
    }
    return log_probs;
  }

  float grid_;
  bool ranks_;

 public:
  int whole_distributions_ = 0;  // Steps that fell back to all_log_probs.
};

// A constraint whose tokens change with the hypothesis: a token t is
// allowed when (t + the sum of the tokens so far + the source's length) % 3
// is not 0, eos always.
class EveryThirdForbidden : public DecodingConstraint {
 public:
  int state_size() const override { return 1; }
  int64_t vocabulary_size() const override { return kVocabulary; }
  void Start(absl::Span<const int> source, int, int32_t* state) const override {
    state[0] = static_cast<int32_t>(source.size());
  }
  void AllowedTokens(const int32_t* state, absl::Span<const int>,
                     uint32_t* allowed) const override {
    std::fill(allowed, allowed + BitRowWords(kVocabulary), 0u);
    for (int t = 0; t < kVocabulary; ++t) {
      if (t == testing::kEos || (t + state[0]) % 3 != 0) BitRowSet(allowed, t);
    }
  }
  void Advance(int token, absl::Span<const int>, int32_t* state) const override {
    state[0] += token;
  }

  static constexpr int kVocabulary = 13;
};

TEST(StepTopKTest, SearchesChooseWhatTheHostRankingChooses) {
  const std::vector<std::vector<int>> sources = {
      {5, 6, 7}, {8}, {9, 4, 4, 5, 6}, {3, 3}, {7, 7, 7, 7}, {4, 9}, {6}};
  const EveryThirdForbidden every_third;
  for (const float grid : {0.0f, 0.125f, 1.0f, kTiny}) {
    for (const int beam : {1, 2, 4, 6}) {
      for (const bool ignore_eos : {false, true}) {
        for (const bool constrained : {false, true}) {
          SCOPED_TRACE(absl::StrCat("grid ", grid, " beam ", beam, " ignore_eos ", ignore_eos,
                                    " constrained ", constrained));
          SearchOptions options;
          options.constraint = constrained ? &every_third : nullptr;
          options.beam_size = beam;
          options.nbest = beam > 1 ? 2 : 1;
          options.max_length_offset = 5;
          options.batch_size = 3;
          options.ignore_eos = ignore_eos;
          std::vector<std::vector<NBestList>> runs;
          for (const bool ranks : {false, true}) {
            ScriptedModel scripted(EveryThirdForbidden::kVocabulary, /*eos_bias=*/0.5);
            RankedModel model(scripted, grid, ranks);
            absl::StatusOr<std::vector<NBestList>> results =
                testing::SearchForBeamSize(options)->Search(model, sources);
            ASSERT_TRUE(results.ok()) << results.status();
            runs.push_back(*results);
            // Greedy never needs more than its best; a constraint leaves rows
            // fewer tokens than the counts below assume.
            if (!ranks || beam == 1 || constrained) continue;
            const int tokens_left = EveryThirdForbidden::kVocabulary - (ignore_eos ? 1 : 0);
            if (grid == kTiny && 2 * beam + 1 <= tokens_left) {
              // Distinct floats with one sum: only the whole distribution
              // decides (unless the list holds every token).
              EXPECT_GT(model.whole_distributions_, 0);
            } else if (grid != 0 && grid != kTiny) {
              // Exact ties on the grid (bf16 logits' kind) are decided by the
              // lists: the tied tokens past a list have the larger ids.
              EXPECT_EQ(model.whole_distributions_, 0);
            }
          }
          for (size_t s = 0; s < sources.size(); ++s) {
            ASSERT_EQ(runs[1][s].size(), runs[0][s].size()) << "source " << s;
            for (size_t i = 0; i < runs[0][s].size(); ++i) {
              EXPECT_EQ(runs[1][s][i].tokens, runs[0][s][i].tokens) << "source " << s;
              EXPECT_EQ(runs[1][s][i].score, runs[0][s][i].score) << "source " << s;
              EXPECT_EQ(runs[1][s][i].ended, runs[0][s][i].ended) << "source " << s;
            }
          }
          if (constrained) {
            // The constraint held: no output takes a forbidden token.
            for (size_t s = 0; s < sources.size(); ++s) {
              for (const Hypothesis& h : runs[1][s]) {
                int32_t sum = static_cast<int32_t>(sources[s].size());
                for (int token : h.tokens) {
                  EXPECT_NE((token + sum) % 3, 0) << "source " << s;
                  sum += token;
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tfm
