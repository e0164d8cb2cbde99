// Sample checkpoints for the checkpoint tests: small, but with every part
// filled, and distinct per seed so averaging and mismatches show.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_TESTING_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_TESTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/train/checkpoint.h"

namespace tfm {
namespace testing {

// A SentencePiece model's bytes (the pieces part of its ModelProto).
std::string SentencePieceModelBytes(const std::vector<std::string>& pieces);

// Weights, Adam moments, state at `update`, a small model config and a
// vocabulary; tensor values depend on `seed`.
Checkpoint SampleCheckpoint(int64_t update, float seed = 1.0f);

// A fresh directory under TEST_TMPDIR.
std::string FreshDirectory(const std::string& name);

// Raw bytes of a host tensor, to compare tensors exactly.
std::string TensorBytes(const Tensor& tensor);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_TESTING_H_
