// The tiny Transformer the end-to-end tests train and decode with: d_model
// 32, d_ff 64, big enough to learn a toy task in a few hundred updates,
// small enough that a test trains it in seconds on 2 cores; and toy batches
// for it.
#ifndef TFM_TESTS_UTIL_TINY_MODEL_H_
#define TFM_TESTS_UTIL_TINY_MODEL_H_

#include <vector>

#include "core/config/task_config.pb.h"
#include "core/data/batch.h"

namespace tfm {
namespace testing {

// Sets `model`'s shape to `layers` encoder and `layers` decoder layers,
// d_model `d_model` (32), d_ff twice that and `heads` heads of d_model /
// heads dimensions each, leaving its other fields (dropout, positions, ...)
// as they are.
void SetTinyModelShape(config::ModelConfig& model, int layers = 2, int heads = 4,
                       int d_model = 32);

// A padded batch of `rows` sentence pairs for a 40-word vocabulary (pad 0,
// bos 1, eos 2): sources of 4..8 ids, targets of 3..7, each ending in eos,
// the others in 3..39; lengths and ids depend on the row and `salt`.
Batch ToyBatch(int rows, int salt);

// A batch of the same kind with the given lengths (eos included), one pair
// a row: for lengths past ToyBatch's (several 64-key attention tiles).
Batch ToyBatchOfLengths(const std::vector<int>& source_lengths,
                        const std::vector<int>& target_lengths, int salt);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_TINY_MODEL_H_
