// Launcher of the split_heads / merge_heads CUDA kernel (plain C++: included
// by host code).
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// Copies the [batch, len, heads] rows of `row_bytes` bytes of `from` to the
// [batch, heads, len] row order of `to` (split), or back (merge). Returns
// nullptr or the CUDA error text.
const char* LaunchPermuteHeads(const void* from, void* to, int64_t batch, int64_t len,
                               int64_t heads, int64_t row_bytes, bool split, StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
