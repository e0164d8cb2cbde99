// Launcher of the split_heads / merge_heads CUDA kernel (plain C++: included
// by host code).
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_

#include <cstdint>

#include "core/device.h"
#include "ops/split_heads/split_heads_kernel_args.h"

namespace tfm {

// Tensors one launch moves (passed by value to the kernel); a longer list
// takes a launch per this many.
inline constexpr int kMaxPermuteEntries = 4;

// Moves every tensor of the list. Returns nullptr or the CUDA error text.
const char* LaunchPermuteHeads(const PermuteHeadsTensor* tensors, int count, bool split,
                               StreamHandle stream);

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_CUDA_H_
