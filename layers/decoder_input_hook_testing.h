// A decoder input hook for tests of the Transformer's side of
// layers/decoder_input_hook.h, with small synthetic vocabularies: each
// decoder input is given the source position that counts its inputs so far
// whose id is a multiple of 3 (the last position, the eos, past the end).
// The count is per row and the position per sentence, so training and
// decoding disagree if rows, sentences or their order are mixed up.
#ifndef TFM_LAYERS_DECODER_INPUT_HOOK_TESTING_H_
#define TFM_LAYERS_DECODER_INPUT_HOOK_TESTING_H_

#include <algorithm>
#include <memory>
#include <vector>

#include "layers/decoder_input_hook.h"

namespace tfm {

inline constexpr char kCountingHookForTesting[] = "counting_for_testing";

class CountingHookForTesting : public DecoderInputHook {
 public:
  static int32_t Position(int64_t counted, int length) {
    return static_cast<int32_t>(std::min<int64_t>(counted, length - 1));
  }
  static bool Counts(int id) { return id % 3 == 0; }

  std::vector<int32_t> BatchMemoryRows(absl::Span<const int> /*sources*/, int source_length,
                                       absl::Span<const int> source_lengths,
                                       absl::Span<const int32_t> decoder_inputs,
                                       int target_length) const override {
    std::vector<int32_t> rows(decoder_inputs.size());
    for (size_t r = 0; r < source_lengths.size(); ++r) {
      int64_t counted = 0;
      for (int t = 0; t < target_length; ++t) {
        counted += Counts(decoder_inputs[r * target_length + t]);
        rows[r * target_length + t] =
            static_cast<int32_t>(r * source_length) + Position(counted, source_lengths[r]);
      }
    }
    return rows;
  }

  class Tracker : public DecoderInputTracker {
   public:
    Tracker(const SourceBatch& sources, int rows_per_sentence)
        : columns_(sources.length),
          lengths_(sources.lengths),
          counted_(static_cast<size_t>(sources.size) * rows_per_sentence, 0) {}
    void Step(absl::Span<const int> last_tokens, int64_t rows_per_sentence,
              absl::Span<int32_t> memory_rows) override {
      for (size_t r = 0; r < last_tokens.size(); ++r) {
        const size_t s = r / rows_per_sentence;
        counted_[r] += Counts(last_tokens[r]);
        memory_rows[r] = static_cast<int32_t>(s * columns_ + Position(counted_[r], lengths_[s]));
      }
    }
    void Reorder(absl::Span<const int> rows, absl::Span<const int32_t> kept) override {
      std::vector<int64_t> counted;
      for (int row : rows) counted.push_back(counted_[row]);
      counted_ = std::move(counted);
      std::vector<int> lengths;
      for (int32_t s : kept) lengths.push_back(lengths_[s]);
      lengths_ = std::move(lengths);
    }

   private:
    int64_t columns_;
    std::vector<int> lengths_;
    std::vector<int64_t> counted_;
  };

  std::unique_ptr<DecoderInputTracker> Start(const SourceBatch& sources,
                                             int rows_per_sentence) const override {
    return std::make_unique<Tracker>(sources, rows_per_sentence);
  }
};

}  // namespace tfm

#endif  // TFM_LAYERS_DECODER_INPUT_HOOK_TESTING_H_
