// Rows of bits, as decoding passes a set of tokens from the host to a model
// and its kernels (a constraint's allowed tokens, which the top-k ops rank
// among: ops/row_top_k/column_filter.h): bit i % 32 of the 32-bit word
// i / 32 stands for entry i, and a row of n entries takes BitRowWords(n)
// words. Plain C++ that nvcc compiles too.
#ifndef TFM_CORE_BIT_ROWS_H_
#define TFM_CORE_BIT_ROWS_H_

#include <cstdint>

#include "core/host_device.h"

namespace tfm {

TFM_HOST_DEVICE constexpr int64_t BitRowWords(int64_t entries) { return (entries + 31) / 32; }

TFM_HOST_DEVICE bool BitRowHas(const uint32_t* row, int64_t i) {
  return ((row[i >> 5] >> (i & 31)) & 1u) != 0;
}

TFM_HOST_DEVICE void BitRowSet(uint32_t* row, int64_t i) { row[i >> 5] |= 1u << (i & 31); }

}  // namespace tfm

#endif  // TFM_CORE_BIT_ROWS_H_
