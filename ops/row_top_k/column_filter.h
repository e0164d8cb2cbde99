// Which columns of a row a row_top_k-shaped op may rank (row_top_k,
// log_softmax_top_k and their `_allowed` forms): never the forbidden column
// (the end-of-sentence token under ignore_eos) and, with a row of allowed
// bits (core/bit_rows.h: what a decoding constraint writes its tokens as,
// runtime/decode/decoding_constraint.h), only the columns whose bit is set,
// so that a constrained search ranks on its device as an unconstrained one
// does. Plain C++ that the CPU kernels and the CUDA kernel share.
#ifndef TFM_OPS_ROW_TOP_K_COLUMN_FILTER_H_
#define TFM_OPS_ROW_TOP_K_COLUMN_FILTER_H_

#include <cstdint>

#include "core/bit_rows.h"
#include "core/host_device.h"

namespace tfm {

struct ColumnFilter {
  int64_t forbidden = -1;             // < 0: none.
  const uint32_t* allowed = nullptr;  // This row's words; null: every column.

  // Row `row`'s filter of a [rows, n] op's: its words of `allowed_rows`
  // ([rows, BitRowWords(n)] bits, or null: every column).
  TFM_HOST_DEVICE static ColumnFilter OfRow(int64_t forbidden, const uint32_t* allowed_rows,
                                            int64_t n, int64_t row) {
    return ColumnFilter{forbidden,
                        allowed_rows == nullptr ? nullptr : allowed_rows + row * BitRowWords(n)};
  }

  TFM_HOST_DEVICE bool Excludes(int64_t column) const {
    if (column == forbidden) return true;
    return allowed != nullptr && !BitRowHas(allowed, column);
  }

  // Bit i set when column first + i may enter, for i < lanes (first a
  // multiple of lanes, and lanes a divisor of 32): a vector's lanes at once.
  TFM_HOST_DEVICE uint32_t LaneBits(int64_t first, int lanes) const {
    const uint32_t all = lanes == 32 ? ~0u : (1u << lanes) - 1u;
    uint32_t bits = allowed == nullptr ? all : (allowed[first >> 5] >> (first & 31)) & all;
    if (forbidden >= first && forbidden < first + lanes) {
      bits &= ~(1u << (forbidden - first));
    }
    return bits;
  }
};

}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_COLUMN_FILTER_H_
