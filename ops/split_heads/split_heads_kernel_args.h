// What split_heads' kernels of every device move, one entry per tensor
// (plain C++: host code and nvcc read it): also how another op's kernels
// (attention's interleaved heads) ask for the same permutation.
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_

#include <cstdint>

namespace tfm {

// One tensor to move: the [batch, len, heads] rows of `row_bytes` bytes of
// `from` to the [batch, heads, len] row order of `to` (split), or back
// (merge).
struct PermuteHeadsTensor {
  const void* from;
  void* to;
  int64_t batch, len, heads, row_bytes;
};

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_
