// A model for search tests whose distributions are a known function of
// (source, prefix): log p(token | source, prefix) from a hash, so every claim
// a test makes (scores, optimality, n-best order, lengths, batching) can be
// checked against values computed in the test. Steps check the search's
// calls (bos first, rows, beam groups) with gtest expectations.
#ifndef TFM_RUNTIME_DECODE_SCRIPTED_MODEL_TESTING_H_
#define TFM_RUNTIME_DECODE_SCRIPTED_MODEL_TESTING_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/incremental_model.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {

constexpr int kPad = 0, kBos = 1, kEos = 2;

// log p(token | source, prefix): logits from a hash of (source, prefix,
// token), with eos pushed up as the prefix grows past the source's length
// (eos_bias per token beyond it) so that hypotheses end at varied lengths.
class ScriptedModel : public IncrementalModel {
 public:
  ScriptedModel(int vocab, double eos_bias, double eos_shift = 0)
      : vocab_(vocab), eos_bias_(eos_bias), eos_shift_(eos_shift) {}

  DecodingVocabulary vocabulary() const override { return {vocab_, kPad, kBos, kEos}; }

  std::vector<double> LogProbs(const std::vector<int>& source,
                               const std::vector<int>& prefix) const {
    uint64_t h = 1469598103934665603ull;
    const auto mix = [&](uint64_t x) { h = (h ^ x) * 1099511628211ull; };
    for (int id : source) mix(id + 7);
    mix(99);
    for (int id : prefix) mix(id + 11);
    std::vector<double> logits(vocab_);
    for (int v = 0; v < vocab_; ++v) {
      uint64_t x = h ^ (v * 0x9E3779B97F4A7C15ull);
      x ^= x >> 29;
      x *= 0xBF58476D1CE4E5B9ull;
      x ^= x >> 32;
      logits[v] = 3.0 * static_cast<double>(x % 10007) / 10007.0;
    }
    logits[kEos] += eos_bias_ * (static_cast<double>(prefix.size()) - source.size()) + eos_shift_;
    double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (double l : logits) sum += std::exp(l - max);
    for (double& l : logits) l = static_cast<float>(l - max - std::log(sum));
    return logits;
  }

  // log-probability of `tokens` (then eos if `ended`).
  double SequenceLogProb(const std::vector<int>& source, const std::vector<int>& tokens,
                         bool ended) const {
    double total = 0;
    std::vector<int> prefix;
    for (int token : tokens) {
      total += LogProbs(source, prefix)[token];
      prefix.push_back(token);
    }
    if (ended) total += LogProbs(source, prefix)[kEos];
    return total;
  }

  struct State : DecoderState {
    int rows() const override { return static_cast<int>(row_sentence.size()); }
    std::vector<std::vector<int>> sources;
    int rows_per_sentence = 1, max_steps = 0, steps = 0;
    std::vector<int> row_sentence;
    std::vector<std::vector<int>> prefixes;
  };

  absl::StatusOr<std::unique_ptr<DecoderState>> Start(const SourceBatch& batch,
                                                      int rows_per_sentence,
                                                      int max_steps) override {
    ++starts;
    auto state = std::make_unique<State>();
    for (int s = 0; s < batch.size; ++s) {
      EXPECT_GE(batch.lengths[s], 1);
      const auto begin = batch.ids.begin() + s * batch.length;
      state->sources.emplace_back(begin, begin + batch.lengths[s]);
      for (int i = 0; i < rows_per_sentence; ++i) state->row_sentence.push_back(s);
    }
    state->rows_per_sentence = rows_per_sentence;
    state->max_steps = max_steps;
    state->prefixes.resize(state->row_sentence.size());
    return std::unique_ptr<DecoderState>(std::move(state));
  }

  absl::StatusOr<Tensor> Step(DecoderState& base, absl::Span<const int> last) override {
    State& state = static_cast<State&>(base);
    EXPECT_LT(state.steps, state.max_steps);
    EXPECT_EQ(static_cast<int>(last.size()), state.rows());
    std::vector<float> out;
    for (int r = 0; r < state.rows(); ++r) {
      if (state.steps == 0) {
        EXPECT_EQ(last[r], kBos);
      } else {
        state.prefixes[r].push_back(last[r]);
      }
      for (double l : LogProbs(state.sources[state.row_sentence[r]], state.prefixes[r])) {
        out.push_back(static_cast<float>(l));
      }
    }
    ++state.steps;
    ++steps;
    return Tensor::FromVector<float>(out, {state.rows(), vocab_});
  }

  absl::Status Reorder(DecoderState& base, absl::Span<const int> rows,
                       int rows_per_sentence) override {
    State& state = static_cast<State&>(base);
    std::vector<int> sentences;
    std::vector<std::vector<int>> prefixes;
    EXPECT_EQ(rows.size() % rows_per_sentence, 0u);
    for (size_t i = 0; i < rows.size(); ++i) {
      sentences.push_back(state.row_sentence[rows[i]]);
      prefixes.push_back(state.prefixes[rows[i]]);
      EXPECT_EQ(sentences.back(), sentences[i - i % rows_per_sentence]);
    }
    state.rows_per_sentence = rows_per_sentence;
    state.row_sentence = sentences;
    state.prefixes = prefixes;
    return absl::OkStatus();
  }

  int starts = 0, steps = 0;

 private:
  int vocab_;
  double eos_bias_, eos_shift_;
};

}  // namespace testing
}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_SCRIPTED_MODEL_TESTING_H_
