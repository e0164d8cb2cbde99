// Test helper for attention's interleaved heads (attention.h), shared by the
// CPU and CUDA tests: the op on interleaved tensors against the heads-first
// op between split_heads and merge_heads, to the bit.
#ifndef TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_
#define TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_

#include <cstring>
#include <string>

#include "core/tensor.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/attention/attention.h"
#include "ops/split_heads/split_heads.h"

namespace tfm {
namespace testing {

// [batch, len, heads, d] seen as [batch, len, heads * d].
inline Tensor FlatHeads(const Tensor& x) {
  return *x.Reshape({x.dim(0), x.dim(1), x.dim(2) * x.dim(3)});
}

inline void ExpectSameBits(const Tensor& a, const Tensor& b, const std::string& what) {
  const Tensor x = *CopyToDevice(a, Device::Cpu());
  const Tensor y = *CopyToDevice(b, Device::Cpu());
  ASSERT_EQ(x.shape(), y.shape()) << what;
  ASSERT_EQ(x.dtype(), y.dtype()) << what;
  EXPECT_EQ(std::memcmp(x.raw_data(), y.raw_data(), x.num_elements() * DTypeSize(x.dtype())), 0)
      << what;
}

// Forward and backward of q, k, v and d_out, laid out as `options`'
// interleaved_queries and interleaved_keys say, against the heads-first op
// (options without them) on split_heads of the interleaved ones, the results
// merged back: the same bits.
inline void ExpectInterleavedEqualsHeadsFirst(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const Tensor& d_out,
                                              const AttentionOptions& options) {
  const bool queries = options.interleaved_queries, keys = options.interleaved_keys;
  const int64_t heads = queries ? q.dim(2) : q.dim(1);
  const auto heads_first_of = [heads](const Tensor& x, bool interleaved) {
    return interleaved ? *SplitHeads(FlatHeads(x), heads) : x;
  };
  const auto compared = [](const Tensor& x, bool interleaved) {
    return interleaved ? FlatHeads(x) : x;
  };
  const auto in_layout = [](const Tensor& x, bool interleaved) {
    return interleaved ? *MergeHeads(x) : x;
  };
  AttentionOptions heads_first_options = options;
  heads_first_options.interleaved_queries = heads_first_options.interleaved_keys = false;

  absl::StatusOr<AttentionOutput> got = ScaledDotProductAttention(q, k, v, options);
  ASSERT_TRUE(got.ok()) << got.status();
  const Tensor q_hf = heads_first_of(q, queries), k_hf = heads_first_of(k, keys),
               v_hf = heads_first_of(v, keys);
  const AttentionOutput want = *ScaledDotProductAttention(q_hf, k_hf, v_hf, heads_first_options);
  ExpectSameBits(compared(got->out, queries), in_layout(want.out, queries), "out");
  ExpectSameBits(got->lse, want.lse, "lse");

  absl::StatusOr<AttentionGrads> grads =
      ScaledDotProductAttentionBackward(q, k, v, got->out, got->lse, d_out, options);
  ASSERT_TRUE(grads.ok()) << grads.status();
  const AttentionGrads want_grads =
      *ScaledDotProductAttentionBackward(q_hf, k_hf, v_hf, want.out, want.lse,
                                         heads_first_of(d_out, queries), heads_first_options);
  ExpectSameBits(compared(grads->dq, queries), in_layout(want_grads.dq, queries), "dq");
  ExpectSameBits(compared(grads->dk, keys), in_layout(want_grads.dk, keys), "dk");
  ExpectSameBits(compared(grads->dv, keys), in_layout(want_grads.dv, keys), "dv");
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_
