#include "ops/attention/attention.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/philox.h"
#include "ops/attention/attention_params.h"
#include "ops/cast/cast.h"
#include "gtest/gtest.h"
#include "ops/attention/interleaved_testing.h"
#include "ops/attention/key_rows_testing.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using testing::AllClose;
using testing::NamedTensors;

struct Case {
  int64_t batch, heads, q_len, k_len, d_k, d_v;
  bool causal = false;
  std::vector<int64_t> key_lengths;  // Empty: no key mask.
  bool as_padding_mask = false;      // Give the lengths as a padding mask.
  float dropout = 0.0f;
};

Tensor Normal(const Shape& shape, uint64_t stream) {
  return *RandomNormal(shape, PhiloxState{7, stream, 0}, 0.0f, 1.0f);
}

// [batch, k_len] i32, 1 for keys at or past the item's length.
Tensor PaddingMask(const Case& c) {
  std::vector<int32_t> mask(c.batch * c.k_len, 0);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t j = 0; j < c.k_len; ++j) {
      if (!c.key_lengths.empty() && j >= c.key_lengths[b]) mask[b * c.k_len + j] = 1;
    }
  }
  return *Tensor::FromVector<int32_t>(mask, {c.batch, c.k_len});
}

AttentionOptions OptionsFor(const Case& c) {
  AttentionOptions options;
  options.causal = c.causal;
  if (!c.key_lengths.empty()) {
    if (c.as_padding_mask) {
      options.key_padding_mask = PaddingMask(c);
    } else {
      options.key_lengths = *Tensor::FromVector<int64_t>(c.key_lengths, {c.batch});
    }
  }
  options.dropout = c.dropout;
  options.dropout_state = PhiloxState{99, 3, 5};
  return options;
}

// The documented dropout layout, written out independently of the kernel:
// 0 or 1 / (1 - p) for every element of [batch, heads, q_len, k_len].
Tensor DropoutMultipliers(const Case& c, const PhiloxState& state) {
  const int64_t count = c.batch * c.heads * c.q_len * c.k_len;
  std::vector<float> keep(count);
  for (int64_t i = 0; i < count; ++i) {
    const philox::Uint4 block = philox::Block(state.seed, state.stream, state.offset + i / 4);
    keep[i] = philox::ToUniform(philox::Lane(block, i % 4)) < c.dropout ? 0.0f
                                                                        : 1.0f / (1.0f - c.dropout);
  }
  return *Tensor::FromVector<float>(keep, {c.batch, c.heads, c.q_len, c.k_len});
}

void ExpectTorchParity(const Case& c) {
  SCOPED_TRACE(absl::StrCat("case ", c.batch, "x", c.heads, " q_len ", c.q_len, " k_len ", c.k_len,
                            " causal ", c.causal, " dropout ", c.dropout));
  const Tensor q = Normal({c.batch, c.heads, c.q_len, c.d_k}, 1);
  const Tensor k = Normal({c.batch, c.heads, c.k_len, c.d_k}, 2);
  const Tensor v = Normal({c.batch, c.heads, c.k_len, c.d_v}, 3);
  const Tensor d_out = Normal({c.batch, c.heads, c.q_len, c.d_v}, 4);
  const AttentionOptions options = OptionsFor(c);
  absl::StatusOr<AttentionOutput> fwd = ScaledDotProductAttention(q, k, v, options);
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  absl::StatusOr<AttentionGrads> grads =
      ScaledDotProductAttentionBackward(q, k, v, fwd->out, fwd->lse, d_out, options);
  ASSERT_TRUE(grads.ok()) << grads.status();

  // Plain torch ops in float64 (torch 1.13 has no fused attention).
  const std::string snippet = absl::StrCat(R"py(
      qd, kd, vd = q.double(), k.double(), v.double()
      s = (qd @ kd.transpose(-1, -2)) / qd.shape[-1] ** 0.5
      lq, lk = s.shape[-2], s.shape[-1]
      allowed = torch.ones(lq, lk, dtype=torch.bool)
      if )py",
                                           c.causal ? "True" : "False", R"py(:
          allowed = torch.tril(allowed, diagonal=lk - lq)
      allowed = allowed & (padding == 0)[:, None, None, :]
      s = s.masked_fill(~allowed, float('-inf'))
      lse = torch.logsumexp(s, -1)
      p = torch.softmax(s, -1) * keep.double()
      out = p @ vd
      dq, dk, dv = grads(out, d_out.double(), [q, k, v])
  )py");
  const Tensor keep = c.dropout > 0
                          ? DropoutMultipliers(c, options.dropout_state)
                          : *Tensor::FromVector<float>(
                                std::vector<float>(c.batch * c.heads * c.q_len * c.k_len, 1.0f),
                                {c.batch, c.heads, c.q_len, c.k_len});
  absl::StatusOr<NamedTensors> ref = testing::TorchReference(
      snippet,
      {{"q", q}, {"k", k}, {"v", v}, {"d_out", d_out}, {"padding", PaddingMask(c)}, {"keep", keep}},
      {"out", "lse", "dq", "dk", "dv"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(AllClose(fwd->out, ref->at("out")));
  EXPECT_TRUE(AllClose(fwd->lse, ref->at("lse")));
  // Gradients sum over all keys or queries: compare relative to the largest.
  // With a single visible key dQ and dK are exactly 0 (the softmax is
  // constant), computed as P (dP - delta) of O(1) terms: their rounding, not
  // the zero result, sets the error, hence a small absolute floor.
  const testing::Tolerance grad_tolerance{.atol = 1e-6, .rtol = 1e-5, .relative_to_max = true};
  EXPECT_TRUE(AllClose(grads->dq, ref->at("dq"), grad_tolerance));
  EXPECT_TRUE(AllClose(grads->dk, ref->at("dk"), grad_tolerance));
  EXPECT_TRUE(AllClose(grads->dv, ref->at("dv"), grad_tolerance));
}

// Lengths that are not multiples of the 64-wide tiles; few heads (the
// backward splits each head's key tiles over several tasks) and many heads
// (one task per head).
TEST(AttentionTest, TorchParityUnmasked) {
  ExpectTorchParity({.batch = 2, .heads = 3, .q_len = 100, .k_len = 130, .d_k = 16, .d_v = 24});
  ExpectTorchParity({.batch = 4, .heads = 9, .q_len = 9, .k_len = 70, .d_k = 8, .d_v = 8});
}

TEST(AttentionTest, TorchParityCausal) {
  ExpectTorchParity(
      {.batch = 2, .heads = 2, .q_len = 150, .k_len = 150, .d_k = 16, .d_v = 16, .causal = true});
  // Incremental decoding: 5 new queries over a cache of 130 keys.
  ExpectTorchParity(
      {.batch = 1, .heads = 2, .q_len = 5, .k_len = 135, .d_k = 16, .d_v = 16, .causal = true});
}

TEST(AttentionTest, TorchParityKeyLengthsAndPaddingMask) {
  Case c{.batch = 3,
         .heads = 2,
         .q_len = 80,
         .k_len = 140,
         .d_k = 12,
         .d_v = 20,
         .key_lengths = {140, 65, 3}};
  ExpectTorchParity(c);
  c.as_padding_mask = true;
  ExpectTorchParity(c);
  c.causal = true;
  c.q_len = 140;
  ExpectTorchParity(c);
}

TEST(AttentionTest, TorchParityDropout) {
  ExpectTorchParity({.batch = 2,
                     .heads = 2,
                     .q_len = 70,
                     .k_len = 90,
                     .d_k = 16,
                     .d_v = 16,
                     .causal = true,
                     .key_lengths = {90, 50},
                     .dropout = 0.3f});
}

// Head sizes that are multiples of 16 run on the packed AVX2 kernels
// (attention_cpu_packed.cc), others on the BLAS tile loops: both at the
// base model's d_k = 64 and at lengths that leave partial tiles and partial
// 6-row register blocks everywhere.
TEST(AttentionTest, TorchParityPackedKernels) {
  ExpectTorchParity({.batch = 2, .heads = 3, .q_len = 67, .k_len = 131, .d_k = 64, .d_v = 64});
  ExpectTorchParity(
      {.batch = 1, .heads = 2, .q_len = 129, .k_len = 129, .d_k = 64, .d_v = 64, .causal = true});
  ExpectTorchParity(
      {.batch = 2, .heads = 1, .q_len = 3, .k_len = 70, .d_k = 64, .d_v = 64, .causal = true});
  ExpectTorchParity({.batch = 3,
                     .heads = 2,
                     .q_len = 71,
                     .k_len = 140,
                     .d_k = 64,
                     .d_v = 64,
                     .causal = true,
                     .key_lengths = {140, 65, 3},
                     .as_padding_mask = true});
  ExpectTorchParity({.batch = 2,
                     .heads = 2,
                     .q_len = 70,
                     .k_len = 90,
                     .d_k = 64,
                     .d_v = 64,
                     .causal = true,
                     .key_lengths = {90, 50},
                     .dropout = 0.3f});
  // Other multiples of 16, and d_k != d_v.
  ExpectTorchParity({.batch = 2,
                     .heads = 2,
                     .q_len = 33,
                     .k_len = 100,
                     .d_k = 32,
                     .d_v = 128,
                     .key_lengths = {100, 17}});
  ExpectTorchParity(
      {.batch = 1, .heads = 2, .q_len = 65, .k_len = 65, .d_k = 128, .d_v = 48, .causal = true});
}

TEST(AttentionTest, TorchParityBlasFallback) {
  ExpectTorchParity({.batch = 2, .heads = 3, .q_len = 67, .k_len = 131, .d_k = 64, .d_v = 24});
  ExpectTorchParity({.batch = 2,
                     .heads = 2,
                     .q_len = 70,
                     .k_len = 90,
                     .d_k = 40,
                     .d_v = 40,
                     .causal = true,
                     .key_lengths = {90, 50},
                     .dropout = 0.3f});
}

// Query rows past the row-by-row kernel's: the tile loops take them.
constexpr int kTiledCopies = 9;

// [batch, heads, 1, d] -> [batch, heads, kTiledCopies, d], the row repeated.
Tensor QueryRepeated(const Tensor& q, int64_t d) {
  std::vector<float> copies;
  for (int64_t i = 0; i < q.num_elements(); i += d) {
    for (int copy = 0; copy < kTiledCopies; ++copy) {
      copies.insert(copies.end(), q.data<float>() + i, q.data<float>() + i + d);
    }
  }
  Shape shape = q.shape();
  shape[2] = kTiledCopies;
  return *Tensor::FromVector<float>(copies, shape);
}

// The first of each kTiledCopies `row`-float rows of `t`, as a tensor of
// `shape`.
Tensor FirstOfCopies(const Tensor& t, const Shape& shape, int64_t row) {
  std::vector<float> first;
  for (int64_t i = 0; i < t.num_elements(); i += kTiledCopies * row) {
    first.insert(first.end(), t.data<float>() + i, t.data<float>() + i + row);
  }
  return *Tensor::FromVector<float>(first, shape);
}

// One query per head (a decoding step over n cached keys) runs on the
// row-by-row kernel (attention_cpu_rowwise.cc). Its output must equal the
// general tile loops', which 9 query rows (the same query repeated) still
// take, and PyTorch's; n covers a lone key, partial 4-key blocks,
// whole tiles and a long cache, with and without a key mask (a padding mask
// under a causal flag, which leaves one query every cached key). 16 heads x
// 1024 keys is past the kernel's threading threshold.
TEST(AttentionTest, SingleQueryMatchesTileLoopsAndTorch) {
  for (int64_t n : {1, 7, 64, 257, 1024}) {
    for (bool masked : {false, true}) {
      Case c{.batch = 2,
             .heads = n == 1024 ? 16 : 3,
             .q_len = 1,
             .k_len = n,
             .d_k = 64,
             .d_v = 64,
             .causal = masked};
      if (masked) c = Case{c.batch, c.heads, 1, n, 64, 64, true, {n, n / 2 + 1}, true};
      SCOPED_TRACE(absl::StrCat("n ", n, " masked ", masked));
      const Tensor q = Normal({c.batch, c.heads, 1, c.d_k}, 1);
      const Tensor k = Normal({c.batch, c.heads, n, c.d_k}, 2);
      const Tensor v = Normal({c.batch, c.heads, n, c.d_v}, 3);
      AttentionOptions options = OptionsFor(c);
      options.causal = false;  // Equal query rows must see the same keys.
      const AttentionOutput single = *ScaledDotProductAttention(q, k, v, options);
      const AttentionOutput tiled =
          *ScaledDotProductAttention(QueryRepeated(q, c.d_k), k, v, options);
      EXPECT_TRUE(AllClose(single.out, FirstOfCopies(tiled.out, single.out.shape(), c.d_v)));
      EXPECT_TRUE(AllClose(single.lse, FirstOfCopies(tiled.lse, single.lse.shape(), 1)));
      ExpectTorchParity(c);
    }
  }
}

// Key rows (a beam's caches reordered by table): attention over k and v
// with key_rows equals attention over the keys and values gathered
// position by position from those rows, bit for bit; k and v may have more
// rows than q. Odd head sizes take the scalar tails; 1 .. 6 keys per row
// through the lengths mask.
TEST(AttentionTest, KeyRowsReadEachPositionFromItsRow) {
  for (const int64_t d : {64, 40, 7}) {
    const int64_t batch = 3, key_batch = 5, heads = 2, k_len = 6;
    // The same keys and values also laid out per query row.
    const auto [q, k, v, table, k_gathered, v_gathered] =
        testing::MakeKeyRowsCase(batch, key_batch, heads, k_len, d, Normal);
    AttentionOptions options;
    options.key_lengths = *Tensor::FromVector<int32_t>({6, 1, 4}, {batch});
    const AttentionOutput expected = *ScaledDotProductAttention(q, k_gathered, v_gathered, options);
    options.key_rows = *Tensor::FromVector<int32_t>(table, {batch, k_len});
    absl::StatusOr<AttentionOutput> got = ScaledDotProductAttention(q, k, v, options);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->out.ToVector<float>(), expected.out.ToVector<float>()) << "d " << d;
    EXPECT_EQ(got->lse.ToVector<float>(), expected.lse.ToVector<float>()) << "d " << d;
  }
  // A row outside k, a wrong shape, too many query rows: errors.
  const Tensor q = Normal({2, 1, 1, 8}, 1), k = Normal({3, 1, 4, 8}, 2);
  AttentionOptions options;
  options.key_rows = *Tensor::FromVector<int32_t>({0, 1, 2, 3, 0, 0, 0, 0}, {2, 4});
  EXPECT_FALSE(ScaledDotProductAttention(q, k, k, options).ok());
  options.key_rows = *Tensor::FromVector<int32_t>({0, 1, 2, 0}, {1, 4});
  EXPECT_FALSE(ScaledDotProductAttention(q, k, k, options).ok());
  options.key_rows = *Tensor::FromVector<int32_t>(std::vector<int32_t>(8, 0), {2, 4});
  EXPECT_FALSE(ScaledDotProductAttention(Normal({2, 1, 9, 8}, 1), Normal({2, 1, 4, 8}, 2),
                                         Normal({2, 1, 4, 8}, 3), options)
                   .ok());
}

// f16 keys and values (a CPU decoding step against 16-bit caches) give, bit
// for bit, what f32 attention gives on the same keys and values rounded to
// f16 and widened back: the kernel widens as it loads and computes in f32.
// One query row (with and without key rows), a beam's four and parsing's
// beam of 21 (past kMaxRowwiseQueries: the row-by-row kernel still takes
// them), whole vectors and scalar tails (d 64, 40, 7).
TEST(AttentionTest, F16KeysAndValuesEqualF32OnTheRoundedValues) {
  const auto rounded = [](const Tensor& x) { return *Cast(*Cast(x, DType::kF16), DType::kF32); };
  for (const int64_t d : {64, 40, 7}) {
    const int64_t batch = 3, key_batch = 5, heads = 2, k_len = 6;
    const auto [q, k, v, table, k_gathered, v_gathered] =
        testing::MakeKeyRowsCase(batch, key_batch, heads, k_len, d, Normal);
    AttentionOptions options;
    options.key_lengths = *Tensor::FromVector<int32_t>({6, 1, 4}, {batch});
    options.key_rows = *Tensor::FromVector<int32_t>(table, {batch, k_len});
    const AttentionOutput expected =
        *ScaledDotProductAttention(q, rounded(k), rounded(v), options);
    absl::StatusOr<AttentionOutput> got =
        ScaledDotProductAttention(q, *Cast(k, DType::kF16), *Cast(v, DType::kF16), options);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->out.dtype(), DType::kF32);
    EXPECT_EQ(got->out.ToVector<float>(), expected.out.ToVector<float>()) << "d " << d;
    EXPECT_EQ(got->lse.ToVector<float>(), expected.lse.ToVector<float>()) << "d " << d;
    // Rounding does change the keys: the f32 answer on the unrounded ones
    // differs (the comparison above is not vacuous).
    const AttentionOutput unrounded = *ScaledDotProductAttention(q, k, v, options);
    EXPECT_NE(got->out.ToVector<float>(), unrounded.out.ToVector<float>());

    // A beam's query rows per head against keys of their own, no key rows,
    // interleaved queries as a decoding step gives them. 21 rows: the f32
    // reference runs the tile loops there, so the sums are summed in
    // another order: equal to rounding, not to the bit.
    for (const int64_t width : {int64_t{4}, int64_t{21}}) {
      const Tensor beam_q = Normal({batch, width, heads, d}, 4);
      const Tensor keys = Normal({batch, heads, k_len, d}, 5);
      const Tensor values = Normal({batch, heads, k_len, d}, 6);
      AttentionOptions beam;
      beam.key_lengths = options.key_lengths;
      beam.interleaved_queries = true;
      const AttentionOutput beam_expected =
          *ScaledDotProductAttention(beam_q, rounded(keys), rounded(values), beam);
      absl::StatusOr<AttentionOutput> beam_got = ScaledDotProductAttention(
          beam_q, *Cast(keys, DType::kF16), *Cast(values, DType::kF16), beam);
      ASSERT_TRUE(beam_got.ok()) << beam_got.status();
      if (width <= kMaxRowwiseQueries) {
        EXPECT_EQ(beam_got->out.ToVector<float>(), beam_expected.out.ToVector<float>())
            << "d " << d;
      } else {
        EXPECT_TRUE(AllClose(beam_got->out, beam_expected.out)) << "d " << d;
        EXPECT_TRUE(AllClose(beam_got->lse, beam_expected.lse)) << "d " << d;
      }
    }
  }
}

// f16 keys and values only where the row-by-row kernel takes them: f32
// queries, both f16, heads-first; the error says what was wrong.
TEST(AttentionTest, F16KeysAndValuesRefuseWhatTheyDoNotTake) {
  const Tensor q = Normal({2, 1, 1, 8}, 1);
  const Tensor k = Normal({2, 1, 4, 8}, 2);
  const Tensor k16 = *Cast(k, DType::kF16);
  const auto error = [](const absl::StatusOr<AttentionOutput>& result) {
    return result.ok() ? std::string("ok") : std::string(result.status().message());
  };
  EXPECT_NE(error(ScaledDotProductAttention(q, k16, k)).find("share one dtype"),
            std::string::npos);
  EXPECT_NE(error(ScaledDotProductAttention(q, *Cast(k, DType::kBF16), *Cast(k, DType::kBF16)))
                .find("share one dtype"),
            std::string::npos);
  AttentionOptions interleaved;
  interleaved.interleaved_keys = true;
  EXPECT_NE(error(ScaledDotProductAttention(q, *Cast(Normal({2, 4, 1, 8}, 4), DType::kF16),
                                            *Cast(Normal({2, 4, 1, 8}, 5), DType::kF16),
                                            interleaved))
                .find("heads-first"),
            std::string::npos);
  // The backward takes no f16 keys (training never caches them).
  const AttentionOutput forward = *ScaledDotProductAttention(q, k, k);
  EXPECT_FALSE(
      ScaledDotProductAttentionBackward(q, k16, k16, forward.out, forward.lse, forward.out).ok());
}

// A beam's rows against their sentence's keys (2 .. 8 query rows per head)
// take the row-by-row kernel too: each row its own causal prefix and the
// item's key mask, forward, backward and dropout as PyTorch computes them.
// No lone key here: softmax over one key is constant, so dK is exactly 0
// and only rounding is left, summed over the rows past the 1e-6 tolerance
// (SingleQueryMatchesTileLoopsAndTorch covers one key).
TEST(AttentionTest, FewQueryRowsMatchTorch) {
  for (int64_t q_len : {2, 4, 8}) {
    for (int64_t n : {2, 7, 64, 257}) {
      for (bool causal : {false, true}) {
        if (causal && n < q_len) continue;  // A causal query row would see no key.
        ExpectTorchParity({.batch = 2, .heads = 3, .q_len = q_len, .k_len = n, .d_k = 64,
                           .d_v = 64, .causal = causal, .key_lengths = {n, n / 2 + 1}});
      }
    }
  }
  ExpectTorchParity({.batch = 2, .heads = 2, .q_len = 4, .k_len = 33, .d_k = 24, .d_v = 40,
                     .key_lengths = {33, 20}, .dropout = 0.3f});
}

// The same query with dropout: the kernel draws the documented stream
// elements (checked against PyTorch with the mask written out).
TEST(AttentionTest, SingleQueryDropout) {
  ExpectTorchParity({.batch = 2,
                     .heads = 2,
                     .q_len = 1,
                     .k_len = 90,
                     .d_k = 64,
                     .d_v = 64,
                     .key_lengths = {90, 50},
                     .dropout = 0.3f});
  ExpectTorchParity(
      {.batch = 1, .heads = 2, .q_len = 1, .k_len = 33, .d_k = 24, .d_v = 40, .dropout = 0.3f});
}

// Few heads: each head's key tiles are split over several tasks whose dQ
// parts are summed in a fixed order, so the result cannot depend on which
// worker ran what. Repeated runs must agree to the bit.
TEST(AttentionTest, BackwardIsDeterministic) {
  for (int64_t d : {64, 24}) {
    const Case c{.batch = 1, .heads = 2, .q_len = 200, .k_len = 300, .d_k = d, .d_v = d};
    const Tensor q = Normal({1, 2, 200, d}, 1), k = Normal({1, 2, 300, d}, 2),
                 v = Normal({1, 2, 300, d}, 3), d_out = Normal({1, 2, 200, d}, 4);
    const AttentionOutput fwd = *ScaledDotProductAttention(q, k, v, OptionsFor(c));
    const AttentionGrads first =
        *ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse, d_out, OptionsFor(c));
    for (int i = 0; i < 3; ++i) {
      const AttentionGrads again =
          *ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse, d_out, OptionsFor(c));
      EXPECT_EQ(first.dq.ToVector<float>(), again.dq.ToVector<float>());
      EXPECT_EQ(first.dk.ToVector<float>(), again.dk.ToVector<float>());
    }
  }
}

void ExpectGradientsMatchFiniteDifferences(const Case& c) {
  const AttentionOptions options = OptionsFor(c);
  testing::ForwardFn forward =
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<AttentionOutput> fwd = ScaledDotProductAttention(in[0], in[1], in[2], options);
    if (!fwd.ok()) return fwd.status();
    return std::vector<Tensor>{fwd->out, fwd->lse};
  };
  testing::BackwardFn backward =
      [&](const std::vector<Tensor>& in, const std::vector<Tensor>& out,
          const std::vector<Tensor>& d_out) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<AttentionGrads> grads =
        ScaledDotProductAttentionBackward(in[0], in[1], in[2], out[0], out[1], d_out[0], options);
    if (!grads.ok()) return grads.status();
    return std::vector<Tensor>{grads->dq, grads->dk, grads->dv};
  };
  EXPECT_TRUE(testing::CheckGradients(
      forward, backward,
      {Normal({c.batch, c.heads, c.q_len, c.d_k}, 1), Normal({c.batch, c.heads, c.k_len, c.d_k}, 2),
       Normal({c.batch, c.heads, c.k_len, c.d_v}, 3)},
      testing::GradientCheckOptions{.outputs_in_loss = {0}}));
}

TEST(AttentionTest, GradientsMatchFiniteDifferences) {
  ExpectGradientsMatchFiniteDifferences(
      {.batch = 2, .heads = 2, .q_len = 5, .k_len = 7, .d_k = 4, .d_v = 3});
  ExpectGradientsMatchFiniteDifferences({.batch = 2,
                                         .heads = 1,
                                         .q_len = 6,
                                         .k_len = 6,
                                         .d_k = 4,
                                         .d_v = 5,
                                         .causal = true,
                                         .key_lengths = {6, 4},
                                         .dropout = 0.25f});
  // The packed kernels (head sizes that are multiples of 16).
  ExpectGradientsMatchFiniteDifferences({.batch = 1,
                                         .heads = 2,
                                         .q_len = 7,
                                         .k_len = 9,
                                         .d_k = 16,
                                         .d_v = 16,
                                         .causal = true,
                                         .key_lengths = {8},
                                         .dropout = 0.25f});
}

TEST(AttentionTest, RowWithoutVisibleKeysIsZeroNotNan) {
  const Case c{
      .batch = 2, .heads = 1, .q_len = 3, .k_len = 4, .d_k = 2, .d_v = 2, .key_lengths = {0, 4}};
  const Tensor q = Normal({2, 1, 3, 2}, 1), k = Normal({2, 1, 4, 2}, 2),
               v = Normal({2, 1, 4, 2}, 3);
  AttentionOutput fwd = *ScaledDotProductAttention(q, k, v, OptionsFor(c));
  AttentionGrads grads = *ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse,
                                                            Normal({2, 1, 3, 2}, 4), OptionsFor(c));
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(fwd.out.data<float>()[i], 0.0f);
    EXPECT_EQ(grads.dq.data<float>()[i], 0.0f);
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(grads.dk.data<float>()[i], 0.0f);
  for (float x : fwd.out.span<float>().subspan(6)) EXPECT_TRUE(std::isfinite(x));
}

TEST(AttentionTest, DropoutZeroIsExactlyNoDropoutAndSeedsMatter) {
  const Tensor q = Normal({1, 2, 20, 8}, 1), k = Normal({1, 2, 20, 8}, 2),
               v = Normal({1, 2, 20, 8}, 3);
  AttentionOptions plain;
  AttentionOptions dropped = plain;
  dropped.dropout = 0.5f;
  dropped.dropout_state = {1, 0, 0};
  AttentionOptions reseeded = dropped;
  reseeded.dropout_state = {2, 0, 0};
  const Tensor a = ScaledDotProductAttention(q, k, v, plain)->out;
  const Tensor b = ScaledDotProductAttention(q, k, v, dropped)->out;
  EXPECT_NE(a.ToVector<float>(), b.ToVector<float>());
  EXPECT_EQ(b.ToVector<float>(),
            ScaledDotProductAttention(q, k, v, dropped)->out.ToVector<float>());
  EXPECT_NE(b.ToVector<float>(),
            ScaledDotProductAttention(q, k, v, reseeded)->out.ToVector<float>());
}

// Interleaved heads are the heads-first op between split_heads and
// merge_heads, to the bit: queries and keys both interleaved (training),
// queries only (a decoding step against heads-first caches) and keys only;
// self- and cross-attention shapes, causal, both masks, dropout (its
// numbering is by (batch, head, query, key) either way), one query row (no
// copy: the layouts share their bytes), and sizes the packed kernels take,
// which read and write interleaved tensors in place (with masks and
// dropout, and with key tiles split between tasks).
TEST(AttentionTest, InterleavedHeadsEqualHeadsFirstBetweenSplitAndMerge) {
  for (const Case& c : {Case{2, 3, 9, 9, 8, 8, true, {9, 4}, false, 0.2f},
                        Case{2, 2, 5, 7, 4, 6, false, {7, 3}, true, 0.1f},
                        Case{3, 2, 1, 6, 8, 8, false, {6, 2, 0}, false, 0.0f},
                        Case{1, 2, 70, 90, 64, 64, false, {}, false, 0.0f},
                        Case{2, 2, 40, 70, 16, 32, false, {70, 33}, true, 0.1f},
                        Case{2, 3, 70, 70, 16, 16, true, {70, 50}, false, 0.2f}}) {
    for (const auto& [queries, keys] : {std::pair{true, true}, {true, false}, {false, true}}) {
      SCOPED_TRACE(::testing::Message() << c.q_len << "x" << c.k_len << " d " << c.d_k
                                        << " queries " << queries << " keys " << keys);
      const auto make = [](int64_t batch, int64_t len, int64_t heads, int64_t d, bool interleaved,
                           uint64_t stream) {
        return interleaved ? Normal({batch, len, heads, d}, stream)
                           : Normal({batch, heads, len, d}, stream);
      };
      const Tensor q = make(c.batch, c.q_len, c.heads, c.d_k, queries, 1);
      const Tensor k = make(c.batch, c.k_len, c.heads, c.d_k, keys, 2);
      const Tensor v = make(c.batch, c.k_len, c.heads, c.d_v, keys, 3);
      const Tensor d_out = make(c.batch, c.q_len, c.heads, c.d_v, queries, 4);
      AttentionOptions options = OptionsFor(c);
      options.interleaved_queries = queries;
      options.interleaved_keys = keys;
      testing::ExpectInterleavedEqualsHeadsFirst(q, k, v, d_out, options);
    }
  }
  // A decoding step's interleaved query against key rows (heads-first
  // caches): the rows are read as with a heads-first query.
  const auto [q, k, v, table, k_gathered, v_gathered] =
      testing::MakeKeyRowsCase(3, 5, 2, 6, 8, Normal);
  AttentionOptions rows;
  rows.key_rows = *Tensor::FromVector<int32_t>(table, {3, 6});
  const AttentionOutput want = *ScaledDotProductAttention(q, k, v, rows);
  rows.interleaved_queries = true;
  const Tensor q_interleaved = *q.Reshape({q.dim(0), q.dim(2), q.dim(1), q.dim(3)});
  absl::StatusOr<AttentionOutput> got = ScaledDotProductAttention(q_interleaved, k, v, rows);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->out.ToVector<float>(), want.out.ToVector<float>());
  EXPECT_EQ(got->lse.ToVector<float>(), want.lse.ToVector<float>());
  // Shapes are read in each side's order, and key rows refuse interleaved
  // keys.
  AttentionOptions options;
  options.interleaved_queries = options.interleaved_keys = true;
  absl::Status status =
      ScaledDotProductAttention(Normal({2, 5, 3, 4}, 1), Normal({2, 6, 2, 4}, 2),
                                Normal({2, 6, 2, 4}, 3), options)
          .status();
  EXPECT_NE(status.message().find("disagree on batch or heads"), std::string::npos) << status;
  options.key_rows = *Tensor::FromVector<int32_t>({0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1}, {2, 6});
  status = ScaledDotProductAttention(Normal({2, 1, 3, 4}, 1), Normal({2, 6, 3, 4}, 2),
                                     Normal({2, 6, 3, 4}, 3), options)
               .status();
  EXPECT_NE(status.message().find("key rows take k and v as [batch, heads, len, d]"),
            std::string::npos)
      << status;
}

// Packed projections (one product's q, k and v, or k and v, read where they
// lie) are the op on q, k and v apart, to the bit: the self-attention and
// cross-attention shapes, causal, key lengths and a padding mask,
// dropout, one position (where interleaved and heads-first share
// their bytes, but a packed part does not) and sizes the packed kernels
// take (in place).
TEST(AttentionTest, PackedProjectionsEqualSeparateOnes) {
  for (const Case& c : {Case{2, 3, 9, 9, 8, 8, true, {9, 4}, false, 0.2f},
                        Case{2, 2, 7, 7, 4, 4, false, {7, 3}, true, 0.1f},
                        Case{3, 2, 1, 1, 8, 8, false, {1, 1, 0}, false, 0.0f},
                        Case{1, 2, 70, 70, 64, 64, true, {}, false, 0.0f},
                        Case{2, 3, 70, 70, 16, 16, false, {70, 41}, true, 0.2f}}) {
    SCOPED_TRACE(::testing::Message() << c.q_len << "x" << c.k_len << " d " << c.d_k);
    const Tensor q = Normal({c.batch, c.q_len, c.heads, c.d_k}, 1);
    const Tensor k = Normal({c.batch, c.k_len, c.heads, c.d_k}, 2);
    const Tensor v = Normal({c.batch, c.k_len, c.heads, c.d_v}, 3);
    const Tensor d_out = Normal({c.batch, c.q_len, c.heads, c.d_v}, 4);
    for (PackedHeads packed : {PackedHeads::kQueriesKeysValues, PackedHeads::kKeysValues}) {
      SCOPED_TRACE(packed == PackedHeads::kKeysValues ? "kv" : "qkv");
      testing::ExpectPackedEqualsSeparate(q, k, v, d_out, OptionsFor(c), packed);
    }
  }
  // Cross-attention: keys of another length than the queries.
  const Case c{2, 2, 5, 11, 8, 8, false, {11, 6}, false, 0.1f};
  testing::ExpectPackedEqualsSeparate(Normal({2, 5, 2, 8}, 1), Normal({2, 11, 2, 8}, 2),
                                      Normal({2, 11, 2, 8}, 3), Normal({2, 5, 2, 8}, 4),
                                      OptionsFor(c), PackedHeads::kKeysValues);
}

// What packing refuses: layouts it does not take, inputs that are not one
// tensor, head slots that are not whole parts.
TEST(AttentionTest, PackedProjectionsRefuseWhatTheyDoNotTake) {
  const Tensor qkv = Normal({2, 5, 6, 4}, 1);
  AttentionOptions options;
  options.interleaved_queries = options.interleaved_keys = true;
  options.packed = PackedHeads::kQueriesKeysValues;
  EXPECT_TRUE(ScaledDotProductAttention(qkv, qkv, qkv, options).ok());
  const auto message = [&](const Tensor& q, const Tensor& k, const Tensor& v) {
    return std::string(ScaledDotProductAttention(q, k, v, options).status().message());
  };
  EXPECT_NE(message(qkv, Normal({2, 5, 6, 4}, 2), qkv).find("q, k and v as one tensor"),
            std::string::npos);
  const Tensor seven = Normal({2, 5, 7, 4}, 1);
  EXPECT_NE(message(seven, seven, seven).find("are not 3 parts"), std::string::npos);
  options.interleaved_queries = false;
  EXPECT_NE(message(qkv, qkv, qkv).find("needs interleaved queries and keys"), std::string::npos);
  options.packed = PackedHeads::kKeysValues;
  options.interleaved_queries = true;
  const Tensor kv = Normal({2, 5, 4, 4}, 2);
  EXPECT_NE(message(Normal({2, 5, 2, 4}, 1), kv, Normal({2, 5, 4, 4}, 2))
                .find("k and v as one tensor"),
            std::string::npos);
  EXPECT_TRUE(ScaledDotProductAttention(Normal({2, 5, 2, 4}, 1), kv, kv, options).ok());
  // kv's heads are half of k's slots: q with other heads disagrees.
  EXPECT_NE(message(Normal({2, 5, 3, 4}, 1), kv, kv).find("k holds 4 head slots, not 2 x q's 3"),
            std::string::npos);
}

TEST(AttentionTest, BadArgumentsAreInvalidArgumentNamingTheOp) {
  const Tensor q = Normal({2, 2, 5, 4}, 1), k = Normal({2, 2, 6, 4}, 2),
               v = Normal({2, 2, 6, 3}, 3);
  auto expect_error = [](const absl::Status& status, const std::string& text) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_NE(status.message().find("scaled_dot_product_attention"), std::string::npos) << status;
    EXPECT_NE(status.message().find(text), std::string::npos) << status;
  };
  expect_error(ScaledDotProductAttention(q, Normal({2, 2, 6, 5}, 2), v).status(), "d_k");
  expect_error(ScaledDotProductAttention(q, k, Normal({2, 2, 7, 3}, 3)).status(), "key length");
  expect_error(ScaledDotProductAttention(Normal({2, 5, 4}, 1), k, v).status(), "f32[2, 5, 4]");
  // The kernel table decides the dtypes: the error names the kernels there are.
  expect_error(ScaledDotProductAttention(*Tensor::Zeros({2, 2, 5, 4}, DType::kI32), k, v).status(),
               "no kernel for CPU/i32; scaled_dot_product_attention's kernels: CPU/f32");
  expect_error(ScaledDotProductAttention(q, *Tensor::Zeros(k.shape(), DType::kI32), v).status(),
               "q, k and v are f32, i32 and f32: they share one dtype");
  AttentionOptions options;
  options.key_lengths = *Tensor::FromVector<int32_t>({6, 7}, {2});
  expect_error(ScaledDotProductAttention(q, k, v, options).status(), "key length 7");
  options.key_lengths = *Tensor::FromVector<int32_t>({6}, {1});
  expect_error(ScaledDotProductAttention(q, k, v, options).status(), "[batch]");
  options = {};
  options.dropout = 1.0f;
  expect_error(ScaledDotProductAttention(q, k, v, options).status(), "dropout");
  const AttentionOutput fwd = *ScaledDotProductAttention(q, k, v);
  expect_error(ScaledDotProductAttentionBackward(q, k, v, fwd.out, fwd.lse, Normal({2, 2, 5, 4}, 4))
                   .status(),
               "d_out");
}

}  // namespace
}  // namespace tfm
