// What split_heads' kernels of every device move, one entry per tensor
// (plain C++: host code and nvcc read it): also how another op's kernels
// (attention's interleaved heads) ask for the same permutation.
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_

#include <cstdint>

namespace tfm {

// One tensor to move: the [batch, len, heads] rows of `row_bytes` bytes of
// `from` to the [batch, heads, len] row order of `to` (split), or back
// (merge). With `slots` > heads the [batch, len] side's positions hold that
// many rows of which these are the first `heads` (attention's packed
// projections: [batch, len, 3 heads] rows of q, k and v, from or to is the
// first row of the part); 0: heads.
struct PermuteHeadsTensor {
  const void* from;
  void* to;
  int64_t batch, len, heads, row_bytes;
  int64_t slots = 0;
};

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_KERNEL_ARGS_H_
