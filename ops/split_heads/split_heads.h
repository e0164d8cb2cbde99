// split_heads and merge_heads: the head layout change of multi-head
// attention, [batch, len, heads * d] <-> [batch, heads, len, d].
//
// The projections work on [batch, len, heads * d] (one GEMM for all heads);
// the fused attention op wants each head's rows contiguous. The two ops are
// inverse permutations, so each one's backward is the other applied to the
// output gradient. Any dtype (the kernels only move bytes); dense row-major.
#ifndef TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_H_
#define TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"
#include "ops/split_heads/split_heads_kernel_args.h"

namespace tfm {

// x [batch, len, heads * d] -> [batch, heads, len, d]; heads must divide the
// last extent.
absl::StatusOr<Tensor> SplitHeads(const Tensor& x, int64_t heads);

// x [batch, heads, len, d] -> [batch, len, heads * d].
absl::StatusOr<Tensor> MergeHeads(const Tensor& x);

// SplitHeads and MergeHeads of each of `xs` (one dtype, one device; shapes
// may differ) in one op call: on CUDA one launch for attention's q, k and v
// (or their gradients) instead of three.
absl::StatusOr<std::vector<Tensor>> SplitHeadsAll(absl::Span<const Tensor> xs, int64_t heads);
absl::StatusOr<std::vector<Tensor>> MergeHeadsAll(absl::Span<const Tensor> xs);

// Gradient of sum(dout * SplitHeads(x, heads)): dout merged back.
absl::StatusOr<Tensor> SplitHeadsBackward(const Tensor& dout);

// Gradient of sum(dout * MergeHeads(x)): dout split into x's heads.
absl::StatusOr<Tensor> MergeHeadsBackward(const Tensor& dout, int64_t heads);

// The permutation itself, on host memory (PermuteHeadsTensor: split, or
// back), for other ops' CPU kernels that take the [batch, len, heads, d]
// layout (attention's interleaved heads). Threaded.
void PermuteHeadsOnHost(const PermuteHeadsTensor& tensor, bool split);

}  // namespace tfm

#endif  // TFM_OPS_SPLIT_HEADS_SPLIT_HEADS_H_
