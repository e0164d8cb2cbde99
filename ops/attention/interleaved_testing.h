// Test helpers for attention's interleaved heads (attention.h), shared by the
// CPU and CUDA tests: the op on interleaved tensors against the heads-first
// op between split_heads and merge_heads, to the bit; packed projections
// against q, k and v apart.
#ifndef TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_
#define TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

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

// Interleaved tensors [batch, len, heads, d] (one dtype, one device) side by
// side along the heads: [batch, len, parts * heads, d], as one product's
// packed projections lay them out (attention.h's PackedHeads).
inline Tensor PackHeads(std::initializer_list<Tensor> parts) {
  std::vector<Tensor> host;
  for (const Tensor& part : parts) host.push_back(*CopyToDevice(part, Device::Cpu()));
  const Tensor& first = host.front();
  const int64_t positions = first.dim(0) * first.dim(1);
  const size_t part_row_bytes = first.dim(2) * first.dim(3) * DTypeSize(first.dtype());
  Tensor packed = *Tensor::Empty(
      {first.dim(0), first.dim(1), first.dim(2) * static_cast<int64_t>(host.size()), first.dim(3)},
      first.dtype());
  char* to = static_cast<char*>(packed.raw_data());
  for (int64_t position = 0; position < positions; ++position) {
    for (const Tensor& part : host) {
      std::memcpy(to, static_cast<const char*>(part.raw_data()) + position * part_row_bytes,
                  part_row_bytes);
      to += part_row_bytes;
    }
  }
  return *CopyToDevice(packed, parts.begin()->device());
}

// Part `part` of `parts` of a packed tensor, as its own interleaved tensor
// (on the host).
inline Tensor UnpackHeads(const Tensor& packed, int64_t part, int64_t parts) {
  const Tensor host = *CopyToDevice(packed, Device::Cpu());
  const int64_t heads = host.dim(2) / parts;
  Tensor out = *Tensor::Empty({host.dim(0), host.dim(1), heads, host.dim(3)}, host.dtype());
  const size_t part_row_bytes = heads * host.dim(3) * DTypeSize(host.dtype());
  for (int64_t position = 0; position < host.dim(0) * host.dim(1); ++position) {
    std::memcpy(static_cast<char*>(out.raw_data()) + position * part_row_bytes,
                static_cast<const char*>(host.raw_data()) +
                    (position * parts + part) * part_row_bytes,
                part_row_bytes);
  }
  return out;
}

// The op on packed projections (`packed`: q, k and v, or k and v, of the
// interleaved q, k and v given) against the op on q, k and v apart (both
// interleaved): the same output and lse to the bit, and the packed
// gradient's parts equal to dq, dk and dv (within `gradient_tolerance` of
// their largest value: 0, the same bits), the gradients of the inputs that
// the packed tensor stands for empty.
inline void ExpectPackedEqualsSeparate(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& d_out, AttentionOptions options,
                                       PackedHeads packed, double gradient_tolerance = 0) {
  options.interleaved_queries = options.interleaved_keys = true;
  options.packed = PackedHeads::kNone;
  const AttentionOutput want = *ScaledDotProductAttention(q, k, v, options);
  const AttentionGrads want_grads =
      *ScaledDotProductAttentionBackward(q, k, v, want.out, want.lse, d_out, options);

  const bool qkv = packed == PackedHeads::kQueriesKeysValues;
  const Tensor kv = PackHeads({k, v});
  const Tensor packed_q = qkv ? PackHeads({q, k, v}) : q;
  const Tensor packed_k = qkv ? packed_q : kv;
  options.packed = packed;
  absl::StatusOr<AttentionOutput> got =
      ScaledDotProductAttention(packed_q, packed_k, packed_k, options);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBits(got->out, want.out, "out");
  ExpectSameBits(got->lse, want.lse, "lse");
  absl::StatusOr<AttentionGrads> grads = ScaledDotProductAttentionBackward(
      packed_q, packed_k, packed_k, got->out, got->lse, d_out, options);
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(grads->dv.num_elements(), 0);
  if (qkv) {
    EXPECT_EQ(grads->dk.num_elements(), 0);
    ASSERT_EQ(grads->dq.shape(), packed_q.shape());
    ExpectWithin(UnpackHeads(grads->dq, 0, 3), want_grads.dq, gradient_tolerance, "dq");
    ExpectWithin(UnpackHeads(grads->dq, 1, 3), want_grads.dk, gradient_tolerance, "dk");
    ExpectWithin(UnpackHeads(grads->dq, 2, 3), want_grads.dv, gradient_tolerance, "dv");
  } else {
    ExpectWithin(grads->dq, want_grads.dq, gradient_tolerance, "dq");
    ASSERT_EQ(grads->dk.shape(), kv.shape());
    ExpectWithin(UnpackHeads(grads->dk, 0, 2), want_grads.dk, gradient_tolerance, "dk");
    ExpectWithin(UnpackHeads(grads->dk, 1, 2), want_grads.dv, gradient_tolerance, "dv");
  }
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_OPS_ATTENTION_INTERLEAVED_TESTING_H_
