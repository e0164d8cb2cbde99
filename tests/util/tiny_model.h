// The tiny Transformer the end-to-end tests train and decode with: d_model
// 32, d_ff 64, big enough to learn a toy task in a few hundred updates,
// small enough that a test trains it in seconds on 2 cores; and toy batches
// for it.
#ifndef TFM_TESTS_UTIL_TINY_MODEL_H_
#define TFM_TESTS_UTIL_TINY_MODEL_H_

#include "core/config/task_config.pb.h"
#include "core/data/batch.h"

namespace tfm {
namespace testing {

// Sets `model`'s shape to `layers` encoder and `layers` decoder layers,
// d_model 32, d_ff 64 and `heads` heads of 32 / heads dimensions each,
// leaving its other fields (dropout, positions, ...) as they are.
void SetTinyModelShape(config::ModelConfig& model, int layers = 2, int heads = 4);

// A padded batch of `rows` sentence pairs for a 40-word vocabulary (pad 0,
// bos 1, eos 2): sources of 4..8 ids, targets of 3..7, each ending in eos,
// the others in 3..39; lengths and ids depend on the row and `salt`.
Batch ToyBatch(int rows, int salt);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_TINY_MODEL_H_
