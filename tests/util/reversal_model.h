// A tiny Transformer trained on the CPU, in-process, on a toy task (reverse
// the source): after 300 updates (a few seconds) its outputs are neither
// empty nor constant, and its next-token distributions are peaked, so two
// devices' rounding rarely changes a search's choice. For the decoding tests
// (tests/decoding_test.cc on the CPU, tests/gpu_decoding_test.cc on a GPU).
#ifndef TFM_TESTS_UTIL_REVERSAL_MODEL_H_
#define TFM_TESTS_UTIL_REVERSAL_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/batch.h"
#include "layers/transformer.h"

namespace tfm {
namespace testing {

inline constexpr int kReversalPad = 0, kReversalBos = 2, kReversalEos = 3, kReversalVocab = 12;

// A reversal pair: source = 2 to 6 words (ids 4..11) + eos, target = the
// words reversed + eos; a function of `seed`.
Example Reversal(uint64_t seed);

// `examples` padded into one batch.
Batch MakeReversalBatch(const std::vector<Example>& examples);

// 2 + 2 layers, d_model 32, `heads` heads (4 of 8 dimensions by default; 1
// of 32: a size the GPU's fast attention kernels take), dropout 0.1.
config::ModelConfig ReversalModelConfig(int heads = 4);

struct TrainedReversal {
  std::unique_ptr<Transformer> model;  // On the CPU.
  double initial_nll = 0;              // On 32 held-out pairs, before training.
  double trained_nll = 0;              // The same after.
};

// Trains a model (ReversalModelConfig(heads)) initialised with `init_seed`
// for `updates` Adam updates of 32 pairs each.
absl::StatusOr<TrainedReversal> TrainReversalModel(int updates, uint64_t init_seed,
                                                   int heads = 4);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_REVERSAL_MODEL_H_
