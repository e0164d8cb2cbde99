// Launcher of row_top_k's CUDA kernel (plain C++: included by host code).
// Returns nullptr or the CUDA error text.
#ifndef TFM_OPS_ROW_TOP_K_ROW_TOP_K_CUDA_H_
#define TFM_OPS_ROW_TOP_K_ROW_TOP_K_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// values/columns [rows, count] from x [rows, n]; count <= kMaxRowTopK.
// Never the column `forbidden` (< 0: none); with `allowed` (device bits
// [rows, BitRowWords(n)], column_filter.h; null: every column) only the
// columns whose bit is set.
const char* LaunchRowTopK(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden,
                          const uint32_t* allowed, float* values, int32_t* columns,
                          StreamHandle stream);

// log_softmax_top_k: the same of log_softmax(x), computed as log_softmax's
// CUDA kernel computes it (the same bits), without writing it.
const char* LaunchLogSoftmaxTopK(const float* x, int64_t rows, int64_t n, int count,
                                 int64_t forbidden, const uint32_t* allowed, float* values,
                                 int32_t* columns, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_ROW_TOP_K_ROW_TOP_K_CUDA_H_
