// Bit-for-bit equality of two training checkpoints, for the tests that promise
// it (exact resume, determinism): every weight, every Adam moment and the
// trainer's position (update, data position, dropout counter, batches seen).
#ifndef TFM_TESTS_UTIL_CHECKPOINT_EQUALITY_H_
#define TFM_TESTS_UTIL_CHECKPOINT_EQUALITY_H_

#include <string>

#include "runtime/train/checkpoint.h"

namespace tfm {
namespace testing {

// Reads `work_dir`'s checkpoint of update `update`; a failure fails the test.
Checkpoint ReadCheckpointOrFail(const std::string& work_dir, int64_t update);

// Adds a test failure naming each tensor or field of `b` that differs from
// `a` in any bit (the first differing element and both values for a tensor).
void ExpectBitIdentical(const Checkpoint& a, const Checkpoint& b);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_CHECKPOINT_EQUALITY_H_
