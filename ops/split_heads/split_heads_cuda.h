// Launcher of the split_heads / merge_heads CUDA kernel (plain C++: included
// by host code).
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_

#include <cstdint>

#include "core/device.h"

namespace tfm {

// One tensor to move: the [batch, len, heads] rows of `row_bytes` bytes of
// `from` to the [batch, heads, len] row order of `to` (split), or back
// (merge).
struct PermuteHeadsTensor {
  const void* from;
  void* to;
  int64_t batch, len, heads, row_bytes;
};

// Tensors one launch moves (passed by value to the kernel); a longer list
// takes a launch per this many.
inline constexpr int kMaxPermuteEntries = 4;

// Moves every tensor of the list. Returns nullptr or the CUDA error text.
const char* LaunchPermuteHeads(const PermuteHeadsTensor* tensors, int count, bool split,
                               StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
