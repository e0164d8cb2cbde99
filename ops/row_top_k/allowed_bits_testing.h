// Tests' allowed bits for the `_allowed` top-k ops (core/bit_rows.h's
// layout): what a decoding constraint writes, sparse and dense rows alike.
#ifndef TFM_OPS_ROW_TOP_K_ALLOWED_BITS_TESTING_H_
#define TFM_OPS_ROW_TOP_K_ALLOWED_BITS_TESTING_H_

#include <cstdint>

#include "core/tensor.h"
#include "core/bit_rows.h"

namespace tfm {
namespace testing {

// i32 [rows, BitRowWords(n)]: row r lets in about one column in 1 + r % 4
// (every column in row 0), and row 1 none at all.
inline Tensor RandomAllowedBits(int64_t rows, int64_t n, uint64_t seed) {
  Tensor bits = *Tensor::Zeros({rows, BitRowWords(n)}, DType::kI32);
  uint32_t* words = reinterpret_cast<uint32_t*>(bits.data<int32_t>());
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t r = 0; r < rows; ++r) {
    if (r == 1) continue;
    for (int64_t c = 0; c < n; ++c) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      if ((state >> 33) % (1 + r % 4) == 0) {
        BitRowSet(words + r * BitRowWords(n), c);
      }
    }
  }
  return bits;
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_ALLOWED_BITS_TESTING_H_
