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
#include "tests/util/torch_parity.h"

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

// |a - b| <= tolerance * max |b| elementwise (SumTolerance); tolerance 0:
// the same bits.
inline void ExpectWithin(const Tensor& a, const Tensor& b, double tolerance,
                         const std::string& what) {
  if (tolerance == 0) return ExpectSameBits(a, b, what);
  EXPECT_TRUE(AllClose(a, b, SumTolerance(tolerance))) << what;
}

// Forward and backward of q, k, v and d_out, laid out as `options`'
// interleaved_queries and interleaved_keys say, against the heads-first op
// (options without them) on split_heads of the interleaved ones, the results
// merged back: the same bits; with a `gradient_tolerance`, the gradients
// within that share of their largest value (float atomics sum dQ, and
// cuDNN's backward, in an order that varies from run to run).
inline void ExpectInterleavedEqualsHeadsFirst(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const Tensor& d_out,
                                              const AttentionOptions& options,
                                              double gradient_tolerance = 0) {
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
  ExpectWithin(compared(grads->dq, queries), in_layout(want_grads.dq, queries),
               gradient_tolerance, "dq");
  ExpectWithin(compared(grads->dk, keys), in_layout(want_grads.dk, keys), gradient_tolerance,
               "dk");
  ExpectWithin(compared(grads->dv, keys), in_layout(want_grads.dv, keys), gradient_tolerance,
               "dv");
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_
