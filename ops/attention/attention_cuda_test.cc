// The CUDA attention kernels against the CPU kernels: forward (out, lse) and
// backward (dq, dk, dv), f32 and bf16, with every mask. bf16 inputs are
// rounded to bf16 first and the reference is the f32 CPU op on the rounded
// values. Every test skips without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/cuda/runtime.h"
#include "core/tensor_copy.h"
#include "core/deterministic.h"
#include "gtest/gtest.h"
#include "ops/attention/attention.h"
#include "ops/attention/attention_backend.h"
#include "ops/attention/interleaved_testing.h"
#include "ops/attention/key_rows_testing.h"
#include "ops/random/random.h"
#include "tests/util/gpu.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using testing::AllClose;
using testing::Tolerance;

struct Case {
  int64_t batch, heads, q_len, k_len, d_k, d_v;
  bool causal = false;
  std::vector<int64_t> key_lengths;  // Empty: no key mask.
  bool as_padding_mask = false;      // Give the lengths as a padding mask,
  bool with_holes = false;           // which also pads every 7th key before them.
  float dropout = 0.0f;
  // The GPU's keys and values past each item's length are NaN (a decoding
  // cache's unwritten tail); the CPU's keep their values. No row sees
  // them, so nothing may change.
  bool nan_past_lengths = false;
};

// `t` ([batch, heads, len, d], host f32) with NaN at every position at or
// past its item's length in c.key_lengths.
Tensor NanPastLengths(const Tensor& t, const Case& c) {
  std::vector<float> values(t.span<float>().begin(), t.span<float>().end());
  const int64_t len = t.dim(2), width = t.dim(3);
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t j = c.key_lengths[b]; j < len; ++j) {
        for (int64_t x = 0; x < width; ++x) values[((b * c.heads + h) * len + j) * width + x] = NAN;
      }
    }
  }
  return *Tensor::FromVector<float>(values, t.shape());
}

std::string Describe(const Case& c, DType dtype) {
  return absl::StrCat(DTypeName(dtype), " ", c.batch, "x", c.heads, " q_len ", c.q_len, " k_len ",
                      c.k_len, " d_k ", c.d_k, " d_v ", c.d_v, " causal ", c.causal, " key mask ",
                      c.key_lengths.empty() ? "none"
                      : c.with_holes        ? "padding with holes"
                      : c.as_padding_mask   ? "padding"
                                            : "lengths",
                      " dropout ", c.dropout);
}

Tensor Normal(const Shape& shape, uint64_t stream) {
  return *RandomNormal(shape, PhiloxState{11, stream, 0}, 0.0f, 1.0f);
}

// `t` (host f32) rounded to bf16, as a bf16 tensor and back in f32.
// Host f32 values rounded to `dtype` (f32, bf16 or f16).
template <typename T>
Tensor RoundTo(const Tensor& t) {
  std::vector<T> values;
  for (float x : t.span<float>()) values.push_back(T(x));
  return *Tensor::FromVector<T>(values, t.shape());
}
Tensor Rounded(const Tensor& t, DType dtype) {
  if (dtype == DType::kBF16) return RoundTo<BFloat16>(t);
  if (dtype == DType::kF16) return RoundTo<Half>(t);
  return t;
}

template <typename T>
Tensor WidenFrom(const Tensor& t) {
  std::vector<float> values;
  for (T x : t.span<T>()) values.push_back(static_cast<float>(x));
  return *Tensor::FromVector<float>(values, t.shape());
}
Tensor ToFloat(const Tensor& t) {
  if (t.dtype() == DType::kBF16) return WidenFrom<BFloat16>(t);
  if (t.dtype() == DType::kF16) return WidenFrom<Half>(t);
  return t;
}

// Host f32 values as `dtype` on `device`.
Tensor OnDevice(const Tensor& t, DType dtype, const Device& device) {
  return *CopyToDevice(Rounded(t, dtype), device);
}

// Host f32 values as the CUDA kernel will see them (rounded for bf16 and
// f16).
Tensor AsSeen(const Tensor& t, DType dtype) { return ToFloat(Rounded(t, dtype)); }

Tensor ToHostFloat(const Tensor& t) { return ToFloat(*CopyToDevice(t, Device::Cpu())); }

AttentionOptions OptionsFor(const Case& c, const Device& device) {
  AttentionOptions options;
  options.causal = c.causal;
  if (!c.key_lengths.empty()) {
    if (c.as_padding_mask) {
      std::vector<int32_t> mask(c.batch * c.k_len, 0);
      for (int64_t b = 0; b < c.batch; ++b) {
        for (int64_t j = 0; j < c.k_len; ++j) {
          mask[b * c.k_len + j] = j >= c.key_lengths[b] || (c.with_holes && j % 7 == 3);
        }
      }
      options.key_padding_mask =
          *CopyToDevice(*Tensor::FromVector<int32_t>(mask, {c.batch, c.k_len}), device);
    } else {
      options.key_lengths =
          *CopyToDevice(*Tensor::FromVector<int64_t>(c.key_lengths, {c.batch}), device);
    }
  }
  options.dropout = c.dropout;
  options.dropout_state = PhiloxState{99, 3, 5};
  // Our kernels: cuDNN is never given a decoding cache's tail.
  if (c.nan_past_lengths) options.backend = "flash";
  return options;
}

void ExpectCudaMatchesCpu(const Case& c, DType dtype) {
  SCOPED_TRACE(Describe(c, dtype));
  const Device gpu = Device::Cuda(0);
  const Tensor q = Normal({c.batch, c.heads, c.q_len, c.d_k}, 1);
  const Tensor k = Normal({c.batch, c.heads, c.k_len, c.d_k}, 2);
  const Tensor v = Normal({c.batch, c.heads, c.k_len, c.d_v}, 3);
  const Tensor d_out = Normal({c.batch, c.heads, c.q_len, c.d_v}, 4);

  const AttentionOptions cpu_options = OptionsFor(c, Device::Cpu());
  absl::StatusOr<AttentionOutput> cpu =
      ScaledDotProductAttention(AsSeen(q, dtype), AsSeen(k, dtype), AsSeen(v, dtype), cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<AttentionGrads> cpu_grads =
      ScaledDotProductAttentionBackward(AsSeen(q, dtype), AsSeen(k, dtype), AsSeen(v, dtype),
                                        cpu->out, cpu->lse, AsSeen(d_out, dtype), cpu_options);
  ASSERT_TRUE(cpu_grads.ok()) << cpu_grads.status();

  const AttentionOptions gpu_options = OptionsFor(c, gpu);
  const Tensor q_gpu = OnDevice(q, dtype, gpu);
  const Tensor k_gpu = OnDevice(c.nan_past_lengths ? NanPastLengths(k, c) : k, dtype, gpu);
  const Tensor v_gpu = OnDevice(c.nan_past_lengths ? NanPastLengths(v, c) : v, dtype, gpu);
  absl::StatusOr<AttentionOutput> cuda =
      ScaledDotProductAttention(q_gpu, k_gpu, v_gpu, gpu_options);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(cuda->out.dtype(), dtype);
  absl::StatusOr<AttentionGrads> cuda_grads = ScaledDotProductAttentionBackward(
      q_gpu, k_gpu, v_gpu, cuda->out, cuda->lse, OnDevice(d_out, dtype, gpu), gpu_options);
  ASSERT_TRUE(cuda_grads.ok()) << cuda_grads.status();

  // f32: only the order of the sums differs. bf16: the kernels round P and
  // their outputs to bf16 (8 bits of mantissa).
  const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
  const Tolerance value{.atol = bf16 ? 2e-2 : 2e-5, .rtol = bf16 ? 2e-2 : 2e-5};
  // Gradients that cancel to ~0 (dq and dk when one key takes all the
  // weight) leave only rounding noise on both sides: the absolute tolerance
  // is scaled by a gradient of the same problem that does not cancel (dv).
  double dv_scale = 0;
  for (float x : cpu_grads->dv.span<float>()) dv_scale = std::max<double>(dv_scale, std::fabs(x));
  const Tolerance sum{
      .atol = (bf16 ? 5e-3 : 1e-5) * dv_scale, .rtol = bf16 ? 2e-2 : 2e-5, .relative_to_max = true};
  EXPECT_TRUE(AllClose(ToHostFloat(cuda->out), cpu->out, value));
  EXPECT_TRUE(AllClose(ToHostFloat(cuda->lse), cpu->lse, value));
  EXPECT_TRUE(AllClose(ToHostFloat(cuda_grads->dq), cpu_grads->dq, sum));
  EXPECT_TRUE(AllClose(ToHostFloat(cuda_grads->dk), cpu_grads->dk, sum));
  EXPECT_TRUE(AllClose(ToHostFloat(cuda_grads->dv), cpu_grads->dv, sum));
}

class AttentionCudaTest : public ::testing::TestWithParam<DType> {};

TEST_P(AttentionCudaTest, Unmasked) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu({.batch = 2, .heads = 3, .q_len = 100, .k_len = 130, .d_k = 64, .d_v = 64},
                       GetParam());
  ExpectCudaMatchesCpu({.batch = 2, .heads = 2, .q_len = 17, .k_len = 17, .d_k = 32, .d_v = 32},
                       GetParam());
  ExpectCudaMatchesCpu({.batch = 1, .heads = 2, .q_len = 130, .k_len = 1, .d_k = 64, .d_v = 64},
                       GetParam());
}

TEST_P(AttentionCudaTest, HeadSizes) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu(
      {.batch = 1, .heads = 2, .q_len = 130, .k_len = 100, .d_k = 128, .d_v = 128, .causal = true},
      GetParam());
  // Sizes without tensor-core kernels, d_k != d_v, and the 16-row tiles.
  ExpectCudaMatchesCpu({.batch = 2, .heads = 1, .q_len = 33, .k_len = 70, .d_k = 40, .d_v = 24},
                       GetParam());
  ExpectCudaMatchesCpu({.batch = 1,
                        .heads = 1,
                        .q_len = 40,
                        .k_len = 50,
                        .d_k = 256,
                        .d_v = 200,
                        .key_lengths = {31}},
                       GetParam());
}

TEST_P(AttentionCudaTest, Causal) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu(
      {.batch = 2, .heads = 2, .q_len = 130, .k_len = 130, .d_k = 64, .d_v = 64, .causal = true},
      GetParam());
  // Queries are the last q_len keys (a decoding step over a cache).
  ExpectCudaMatchesCpu(
      {.batch = 1, .heads = 2, .q_len = 17, .k_len = 130, .d_k = 64, .d_v = 64, .causal = true},
      GetParam());
  // More queries than keys: the first rows see no key at all.
  ExpectCudaMatchesCpu(
      {.batch = 1, .heads = 2, .q_len = 100, .k_len = 17, .d_k = 32, .d_v = 32, .causal = true},
      GetParam());
}

TEST_P(AttentionCudaTest, KeyLengthsAndPaddingMask) {
  TFM_SKIP_WITHOUT_GPU();
  // Item 2 has no key at all: its rows are zero with zero gradients.
  Case c{.batch = 3,
         .heads = 2,
         .q_len = 100,
         .k_len = 130,
         .d_k = 64,
         .d_v = 64,
         .key_lengths = {130, 65, 0}};
  ExpectCudaMatchesCpu(c, GetParam());
  c.as_padding_mask = true;
  ExpectCudaMatchesCpu(c, GetParam());
  c.causal = true;
  c.q_len = 130;
  c.key_lengths = {130, 17, 1};
  ExpectCudaMatchesCpu(c, GetParam());
}

// Keys and values past the lengths hold NaN on the GPU: forward and
// backward (dQ sums over a key tile's keys, the unseen ones' included) must
// not read them, on the tensor-core kernels (d 64: one key tile and
// several) and the CUDA-core ones (d 40).
TEST_P(AttentionCudaTest, NaNPastTheKeyLengthsIsNeverRead) {
  TFM_SKIP_WITHOUT_GPU();
  Case c{.batch = 3,
         .heads = 2,
         .q_len = 40,
         .k_len = 48,
         .d_k = 64,
         .d_v = 64,
         .key_lengths = {48, 20, 1},
         .nan_past_lengths = true};
  ExpectCudaMatchesCpu(c, GetParam());
  c.k_len = 150;
  c.key_lengths = {150, 70, 3};
  ExpectCudaMatchesCpu(c, GetParam());
  c.as_padding_mask = true;
  c.causal = true;
  c.q_len = 150;
  ExpectCudaMatchesCpu(c, GetParam());
  c.d_k = c.d_v = 40;
  ExpectCudaMatchesCpu(c, GetParam());
}

// Padding before the last unpadded key: the kernels need the per-key bias.
TEST_P(AttentionCudaTest, PaddingMaskWithHoles) {
  TFM_SKIP_WITHOUT_GPU();
  Case c{.batch = 3,
         .heads = 2,
         .q_len = 150,
         .k_len = 200,
         .d_k = 64,
         .d_v = 64,
         .key_lengths = {200, 120, 5},
         .as_padding_mask = true,
         .with_holes = true};
  ExpectCudaMatchesCpu(c, GetParam());
  c.causal = true;
  c.dropout = 0.1f;
  ExpectCudaMatchesCpu(c, GetParam());
  c.d_k = c.d_v = 40;  // The CUDA-core kernels for both dtypes.
  ExpectCudaMatchesCpu(c, GetParam());
}

TEST_P(AttentionCudaTest, Dropout) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu({.batch = 2,
                        .heads = 2,
                        .q_len = 70,
                        .k_len = 90,
                        .d_k = 64,
                        .d_v = 64,
                        .causal = true,
                        .key_lengths = {90, 50},
                        .dropout = 0.3f},
                       GetParam());
  ExpectCudaMatchesCpu({.batch = 1,
                        .heads = 3,
                        .q_len = 130,
                        .k_len = 100,
                        .d_k = 32,
                        .d_v = 32,
                        .key_lengths = {77},
                        .as_padding_mask = true,
                        .dropout = 0.1f},
                       GetParam());
}

// The paper's sentences: every head's keys fit one 64-key tile, so the
// tensor-core backward stores dQ itself (no f32 buffer): lengths, an empty
// sentence (its dQ rows must be zeroed, not left as the allocator gave
// them), holes, dropout, causal with more queries than keys, and exactly 64
// keys; head sizes 32, 64 and 128.
TEST_P(AttentionCudaTest, ShortSentencesOneKeyTile) {
  TFM_SKIP_WITHOUT_GPU();
  for (const int64_t d : {32, 64, 128}) {
    Case c{.batch = 4,
           .heads = 2,
           .q_len = 48,
           .k_len = 48,
           .d_k = d,
           .d_v = d,
           .key_lengths = {48, 30, 0, 1},
           .dropout = 0.1f};
    ExpectCudaMatchesCpu(c, GetParam());
    c.as_padding_mask = true;
    c.with_holes = true;
    ExpectCudaMatchesCpu(c, GetParam());
    c.causal = true;
    c.q_len = 70;  // The first rows see no key.
    c.k_len = 64;
    c.key_lengths = {64, 33, 0, 64};
    ExpectCudaMatchesCpu(c, GetParam());
  }
  // More heads than a GPU holds blocks at once (1,024 against 4 a
  // multiprocessor, 528 on an H100 or H200): with
  // TFM_ATTENTION_SHORT_OCCUPANCY=2 a persistent forward block walks
  // several heads, the next one's tiles loading while it computes this one
  // (tools/device/gpu_checks.sh's occupancy stage runs this test so).
  Case many{.batch = 64, .heads = 16, .q_len = 48, .k_len = 48, .d_k = 64, .d_v = 64,
            .dropout = 0.1f};
  for (int64_t b = 0; b < many.batch; ++b) {
    many.key_lengths.push_back(b % 5 == 4 ? 0 : 48 - b % 37);
  }
  ExpectCudaMatchesCpu(many, GetParam());
  // A whole 64-row query tile (the persistent backward's one query step)
  // beside heads whose keys are all past their length: items that load no
  // query step of their own while the next item's tiles are in flight.
  many.q_len = 64;
  many.k_len = 64;
  many.batch = 16;
  many.key_lengths.clear();
  for (int64_t b = 0; b < many.batch; ++b) many.key_lengths.push_back(b % 3 == 1 ? 0 : 64 - b);
  ExpectCudaMatchesCpu(many, GetParam());
}

// Many key tiles (the tensor-core kernels double-buffer 64-key tiles) and
// several query tiles per head.
TEST_P(AttentionCudaTest, LongSequences) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu(
      {.batch = 1, .heads = 2, .q_len = 300, .k_len = 300, .d_k = 64, .d_v = 64, .causal = true},
      GetParam());
  ExpectCudaMatchesCpu({.batch = 2,
                        .heads = 1,
                        .q_len = 257,
                        .k_len = 1000,
                        .d_k = 64,
                        .d_v = 64,
                        .key_lengths = {1000, 555},
                        .as_padding_mask = true},
                       GetParam());
  ExpectCudaMatchesCpu({.batch = 1,
                        .heads = 1,
                        .q_len = 200,
                        .k_len = 333,
                        .d_k = 128,
                        .d_v = 128,
                        .causal = true,
                        .dropout = 0.2f},
                       GetParam());
}

TEST_P(AttentionCudaTest, SingleQuery) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectCudaMatchesCpu({.batch = 3,
                        .heads = 2,
                        .q_len = 1,
                        .k_len = 100,
                        .d_k = 64,
                        .d_v = 64,
                        .causal = true,
                        .key_lengths = {100, 40, 1}},
                       GetParam());
}

// Decoding steps (the decode kernel, attention_cuda_decode.cu): a few query
// rows per head over a cache whose capacity exceeds the key lengths. Past
// each row's length the GPU's keys and values are NaN, as garbage in a cache
// may be, and the CPU reference sees zeros there: any read of the tail
// shows. Forward only (decoding has no backward). Tolerances: f32 1e-5
// absolute + 1e-5 relative (only the order of the sums differs); bf16
// 1e-2 + 1e-2 (the output is rounded to bf16; P stays f32).
struct DecodeCase {
  int64_t batch, heads = 8, q_len = 1, capacity, d = 64;
  std::vector<int64_t> key_lengths;  // [batch]
  bool causal = false;
  bool as_padding_mask = false;  // The lengths as a padding mask with holes.
  std::optional<float> scale;
};

// Largest |got - want| over the entries where they differ (-inf == -inf).
double MaxAbsDiff(const Tensor& got, const Tensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const float a = got.data<float>()[i], b = want.data<float>()[i];
    if (a == b) continue;
    worst = std::max<double>(worst, std::isnan(a - b) ? INFINITY : std::fabs(a - b));
  }
  return worst;
}

void ExpectDecodeMatchesCpu(const DecodeCase& c, DType dtype) {
  const std::string what = absl::StrCat(
      DTypeName(dtype), " batch ", c.batch, " heads ", c.heads, " q_len ", c.q_len, " keys ",
      *std::max_element(c.key_lengths.begin(), c.key_lengths.end()), " of ", c.capacity, " d ", c.d,
      c.causal ? " causal" : "", c.as_padding_mask ? " padding mask with holes" : "",
      c.scale ? absl::StrCat(" scale ", *c.scale) : "");
  SCOPED_TRACE(what);
  const Device gpu = Device::Cuda(0);
  const Tensor q = Normal({c.batch, c.heads, c.q_len, c.d}, 21);
  Tensor kv[2] = {Normal({c.batch, c.heads, c.capacity, c.d}, 22),
                  Normal({c.batch, c.heads, c.capacity, c.d}, 23)};
  Tensor kv_gpu[2];
  for (int t = 0; t < 2; ++t) {
    Tensor garbage = *Tensor::Empty(kv[t].shape(), DType::kF32);
    float* clean = kv[t].data<float>();
    float* dirty = garbage.data<float>();
    for (int64_t row = 0; row < c.batch * c.heads; ++row) {
      const int64_t length = c.key_lengths[row / c.heads];
      for (int64_t j = 0; j < c.capacity; ++j) {
        for (int64_t x = 0; x < c.d; ++x) {
          const int64_t e = (row * c.capacity + j) * c.d + x;
          if (j >= length) clean[e] = 0.0f;
          dirty[e] = j >= length ? NAN : clean[e];
        }
      }
    }
    kv_gpu[t] = OnDevice(garbage, dtype, gpu);
  }
  Case mask{.batch = c.batch,
            .heads = c.heads,
            .q_len = c.q_len,
            .k_len = c.capacity,
            .d_k = c.d,
            .d_v = c.d,
            .causal = c.causal,
            .key_lengths = c.key_lengths,
            .as_padding_mask = c.as_padding_mask,
            .with_holes = c.as_padding_mask};
  AttentionOptions cpu_options = OptionsFor(mask, Device::Cpu());
  AttentionOptions gpu_options = OptionsFor(mask, gpu);
  cpu_options.scale = gpu_options.scale = c.scale;
  absl::StatusOr<AttentionOutput> cpu = ScaledDotProductAttention(
      AsSeen(q, dtype), AsSeen(kv[0], dtype), AsSeen(kv[1], dtype), cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  absl::StatusOr<AttentionOutput> cuda =
      ScaledDotProductAttention(OnDevice(q, dtype, gpu), kv_gpu[0], kv_gpu[1], gpu_options);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  const Tensor out = ToHostFloat(cuda->out), lse = ToHostFloat(cuda->lse);
  std::printf("decode %s: max |out diff| %.2e, max |lse diff| %.2e\n", what.c_str(),
              MaxAbsDiff(out, cpu->out), MaxAbsDiff(lse, cpu->lse));
  const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
  const Tolerance tolerance{.atol = bf16 ? 1e-2 : 1e-5, .rtol = bf16 ? 1e-2 : 1e-5};
  EXPECT_TRUE(AllClose(out, cpu->out, tolerance));
  EXPECT_TRUE(AllClose(lse, cpu->lse, tolerance));
}

// Lengths spread over [1, length] for `batch` rows, the first one full.
std::vector<int64_t> SpreadLengths(int64_t batch, int64_t length) {
  std::vector<int64_t> lengths(batch);
  for (int64_t b = 0; b < batch; ++b) lengths[b] = b == 0 ? length : 1 + (b * 7919) % length;
  return lengths;
}

// Self-attention over the cache: one query per row, keys [rows, heads,
// capacity, d] with key lengths position + 1. Few rows over long keys split
// the keys over several blocks (and a capacity of 1024 leaves most splits
// past the lengths empty); many rows take one block per head.
TEST_P(AttentionCudaTest, DecodeSelfAttentionSteps) {
  TFM_SKIP_WITHOUT_GPU();
  for (int64_t rows : {1, 4, 64, 256}) {
    for (int64_t length : {1, 7, 33, 300, 1000}) {
      // 256 rows x 1000 keys would take 0.5 GB per tensor on the host.
      if (rows == 256 && length == 1000) continue;
      ExpectDecodeMatchesCpu({.batch = rows,
                              .capacity = rows <= 4 ? 1024 : length + 5,
                              .key_lengths = SpreadLengths(rows, length)},
                             GetParam());
    }
  }
}

// Encoder-decoder attention in a beam: a sentence's rows_per_sentence
// hypotheses query its memory together (q_len 4, or 5 and 8 for wider
// beams), the memory padded to the longest sentence.
TEST_P(AttentionCudaTest, DecodeBeamSharesMemory) {
  TFM_SKIP_WITHOUT_GPU();
  for (int64_t q_len : {2, 4, 5, 8}) {
    ExpectDecodeMatchesCpu(
        {.batch = 16, .q_len = q_len, .capacity = 41, .key_lengths = SpreadLengths(16, 41)},
        GetParam());
    ExpectDecodeMatchesCpu({.batch = 1, .q_len = q_len, .capacity = 700, .key_lengths = {650}},
                           GetParam());
  }
}

// The op's other options: the causal mask (queries are the last q_len
// keys), a padding mask with holes before the end, a sentence with no key
// (zeros, lse -inf), another scale (negative too), head sizes 32 and 128,
// and 40 (not the decode kernel's: the tiles take it).
TEST_P(AttentionCudaTest, DecodeOptionsAndHeadSizes) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectDecodeMatchesCpu(
      {.batch = 3, .q_len = 3, .capacity = 300, .key_lengths = {300, 2, 150}, .causal = true},
      GetParam());
  ExpectDecodeMatchesCpu({.batch = 3,
                          .q_len = 4,
                          .capacity = 500,
                          .key_lengths = {500, 0, 77},
                          .as_padding_mask = true},
                         GetParam());
  ExpectDecodeMatchesCpu({.batch = 2, .capacity = 400, .key_lengths = {0, 399}, .scale = 0.3f},
                         GetParam());
  ExpectDecodeMatchesCpu(
      {.batch = 2, .q_len = 2, .capacity = 90, .key_lengths = {90, 45}, .scale = -0.2f},
      GetParam());
  for (int64_t d : {32, 128, 40}) {
    ExpectDecodeMatchesCpu(
        {.batch = 4, .q_len = 1, .capacity = 333, .d = d, .key_lengths = SpreadLengths(4, 333)},
        GetParam());
    ExpectDecodeMatchesCpu(
        {.batch = 4, .q_len = 4, .capacity = 70, .d = d, .key_lengths = SpreadLengths(4, 70)},
        GetParam());
  }
}

// Key rows (a beam's caches reordered by table) on the GPU: attention over
// a cache read through the rows equals, bit for bit, the same kernel over
// the keys and values gathered position by position from those rows (the
// decode kernel reads the same values in the same order; f16 and head
// size 40 take the gather inside the op, then the same kernels). The cache
// holds more rows than the queries; 1 .. k_len keys per row.
TEST_P(AttentionCudaTest, KeyRowsReadEachPositionFromItsRow) {
  TFM_SKIP_WITHOUT_GPU();
  const DType dtype = GetParam();
  const Device gpu = Device::Cuda(0);
  for (const int64_t d : {64, 40}) {
    const int64_t batch = 12, key_batch = 16, heads = 8, k_len = 70;
    SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " d ", d));
    const auto [q, k, v, table, k_gathered, v_gathered] =
        testing::MakeKeyRowsCase(batch, key_batch, heads, k_len, d, Normal);
    std::vector<int32_t> lengths(batch);
    for (int64_t b = 0; b < batch; ++b) lengths[b] = static_cast<int32_t>(1 + (b * 13) % k_len);
    AttentionOptions options;
    options.key_lengths = *CopyToDevice(*Tensor::FromVector<int32_t>(lengths, {batch}), gpu);
    absl::StatusOr<AttentionOutput> expected =
        ScaledDotProductAttention(OnDevice(q, dtype, gpu), OnDevice(k_gathered, dtype, gpu),
                                  OnDevice(v_gathered, dtype, gpu), options);
    ASSERT_TRUE(expected.ok()) << expected.status();
    options.key_rows = *CopyToDevice(*Tensor::FromVector<int32_t>(table, {batch, k_len}), gpu);
    absl::StatusOr<AttentionOutput> got = ScaledDotProductAttention(
        OnDevice(q, dtype, gpu), OnDevice(k, dtype, gpu), OnDevice(v, dtype, gpu), options);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(ToHostFloat(got->out).ToVector<float>(),
              ToHostFloat(expected->out).ToVector<float>());
    EXPECT_EQ(ToHostFloat(got->lse).ToVector<float>(),
              ToHostFloat(expected->lse).ToVector<float>());
  }
}

// Throughput of the bf16 kernels at d = 64, h = 8 (the sizes of the speed
// goal: ~16k tokens per batch with a padding mask, and long sequences with
// and without the causal mask). Disabled: run it by hand on a GPU with (one
// command line)
//   bazel test //ops/attention:attention_cuda_test --test_output=all
//     --test_arg=--gtest_also_run_disabled_tests --test_arg=--gtest_filter='*Speed*'
// FLOPs count the four (forward) and ten (backward) n^2 d products of flash
// attention, halved under the causal mask, over the unpadded keys.
// Deterministic mode (core/deterministic.h): the backward repeats bit for
// bit (dQ summed per key tile in a fixed order, not with atomics), still
// matches the CPU, on the CUDA-core kernels (f32) and the tensor-core ones
// (bf16 and f16 at d 64), causal, masked and long enough for many key tiles,
// and short enough for one.
TEST_P(AttentionCudaTest, DeterministicBackwardRepeatsBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  const DType dtype = GetParam();
  const ScopedDeterministicKernels deterministic;
  for (const Case& c :
       {Case{.batch = 2, .heads = 2, .q_len = 130, .k_len = 300, .d_k = 64, .d_v = 64,
             .key_lengths = {300, 170}},
        Case{.batch = 1, .heads = 3, .q_len = 200, .k_len = 200, .d_k = 64, .d_v = 64,
             .causal = true},
        // One key tile: dQ stored by its only block.
        Case{.batch = 3, .heads = 2, .q_len = 48, .k_len = 48, .d_k = 64, .d_v = 64,
             .key_lengths = {48, 20, 0}}}) {
    ExpectCudaMatchesCpu(c, dtype);
    SCOPED_TRACE(Describe(c, dtype));
    const Device gpu = Device::Cuda(0);
    const Tensor q = OnDevice(Normal({c.batch, c.heads, c.q_len, c.d_k}, 1), dtype, gpu);
    const Tensor k = OnDevice(Normal({c.batch, c.heads, c.k_len, c.d_k}, 2), dtype, gpu);
    const Tensor v = OnDevice(Normal({c.batch, c.heads, c.k_len, c.d_v}, 3), dtype, gpu);
    const Tensor d_out = OnDevice(Normal({c.batch, c.heads, c.q_len, c.d_v}, 4), dtype, gpu);
    const AttentionOptions options = OptionsFor(c, gpu);
    absl::StatusOr<AttentionOutput> forward = ScaledDotProductAttention(q, k, v, options);
    ASSERT_TRUE(forward.ok()) << forward.status();
    std::vector<float> first[3];
    for (int run = 0; run < 3; ++run) {
      absl::StatusOr<AttentionGrads> grads = ScaledDotProductAttentionBackward(
          q, k, v, forward->out, forward->lse, d_out, options);
      ASSERT_TRUE(grads.ok()) << grads.status();
      const Tensor* all[3] = {&grads->dq, &grads->dk, &grads->dv};
      for (int i = 0; i < 3; ++i) {
        const std::vector<float> values = ToHostFloat(*all[i]).ToVector<float>();
        if (run == 0) {
          first[i] = values;
        } else {
          EXPECT_EQ(std::memcmp(values.data(), first[i].data(), values.size() * sizeof(float)), 0)
              << "gradient " << i << " run " << run;
        }
      }
    }
  }
}

// Interleaved heads on the GPU are the heads-first op between split_heads
// and merge_heads, to the bit (deterministic mode, so that dQ's sums run in
// one order), with queries and keys interleaved (training), queries only (a
// decoding step against heads-first caches) and keys only: the tensor-core
// kernels reading the layout in place (one key tile and many, causal,
// holes, dropout), the decode kernel reading interleaved queries (a beam's
// 4 rows and one row, with and without split keys), the CUDA-core kernels
// (f32, head size 40) and cuDNN's (bf16, long, no dropout) behind the op's
// permutes.
void ExpectInterleavedMatchesHeadsFirst(DType dtype, double gradient_tolerance) {
  const Device gpu = Device::Cuda(0);
  for (const Case& c :
       {Case{.batch = 3, .heads = 2, .q_len = 48, .k_len = 48, .d_k = 64, .d_v = 64,
             .key_lengths = {48, 20, 0}, .dropout = 0.1f},
        Case{.batch = 2, .heads = 3, .q_len = 100, .k_len = 130, .d_k = 64, .d_v = 64,
             .causal = true, .key_lengths = {130, 70}, .as_padding_mask = true,
             .with_holes = true},
        Case{.batch = 2, .heads = 2, .q_len = 33, .k_len = 70, .d_k = 128, .d_v = 128,
             .dropout = 0.2f},
        Case{.batch = 2, .heads = 2, .q_len = 30, .k_len = 50, .d_k = 40, .d_v = 40},
        Case{.batch = 2, .heads = 2, .q_len = 200, .k_len = 200, .d_k = 64, .d_v = 64,
             .key_lengths = {200, 120}},
        Case{.batch = 3, .heads = 8, .q_len = 4, .k_len = 30, .d_k = 64, .d_v = 64,
             .key_lengths = {30, 9, 1}},
        Case{.batch = 2, .heads = 8, .q_len = 1, .k_len = 3000, .d_k = 64, .d_v = 64,
             .key_lengths = {3000, 1700}}}) {
    for (const auto& [queries, keys] : {std::pair{true, true}, {true, false}, {false, true}}) {
      SCOPED_TRACE(::testing::Message() << Describe(c, dtype) << " interleaved queries "
                                        << queries << " keys " << keys);
      const auto make = [&](int64_t len, int64_t d, bool interleaved, uint64_t stream) {
        return OnDevice(interleaved ? Normal({c.batch, len, c.heads, d}, stream)
                                    : Normal({c.batch, c.heads, len, d}, stream),
                        dtype, gpu);
      };
      const Tensor q = make(c.q_len, c.d_k, queries, 1);
      const Tensor k = make(c.k_len, c.d_k, keys, 2);
      const Tensor v = make(c.k_len, c.d_v, keys, 3);
      const Tensor d_out = make(c.q_len, c.d_v, queries, 4);
      AttentionOptions options = OptionsFor(c, gpu);
      options.interleaved_queries = queries;
      options.interleaved_keys = keys;
      testing::ExpectInterleavedEqualsHeadsFirst(q, k, v, d_out, options, gradient_tolerance);
    }
  }
}

TEST_P(AttentionCudaTest, InterleavedHeadsMatchHeadsFirst) {
  TFM_SKIP_WITHOUT_GPU();
  const ScopedDeterministicKernels deterministic;
  ExpectInterleavedMatchesHeadsFirst(GetParam(), /*gradient_tolerance=*/0);
}

// Packed projections on the GPU (attention.h's PackedHeads) are the op on
// q, k and v apart, the gradients to the bit in deterministic mode, within
// the atomics' rounding otherwise: the tensor-core kernels reading and
// writing each operand's part in place (one key tile, where the backward
// stores dQ itself, and many, with the f32 dQ sums scattered back into dq's
// part), and behind the op's permutes the CUDA-core kernels (f32, head size
// 40) and cuDNN's (bf16, long, no dropout); and few query rows, which the
// decode kernel reads in place too (bf16; f32 behind the permutes), so
// that packing picks the same kernel as the separate tensors do.
void ExpectPackedMatchesSeparate(DType dtype, double gradient_tolerance) {
  const Device gpu = Device::Cuda(0);
  for (const Case& c :
       {Case{.batch = 3, .heads = 2, .q_len = 48, .k_len = 48, .d_k = 64, .d_v = 64,
             .key_lengths = {48, 20, 0}, .dropout = 0.1f},
        Case{.batch = 2, .heads = 3, .q_len = 130, .k_len = 130, .d_k = 64, .d_v = 64,
             .causal = true, .key_lengths = {130, 70}, .as_padding_mask = true,
             .with_holes = true},
        Case{.batch = 2, .heads = 2, .q_len = 70, .k_len = 70, .d_k = 128, .d_v = 128,
             .dropout = 0.2f},
        Case{.batch = 2, .heads = 2, .q_len = 30, .k_len = 30, .d_k = 40, .d_v = 40},
        Case{.batch = 2, .heads = 2, .q_len = 200, .k_len = 200, .d_k = 64, .d_v = 64,
             .key_lengths = {200, 120}},
        Case{.batch = 3, .heads = 8, .q_len = 4, .k_len = 4, .d_k = 64, .d_v = 64,
             .key_lengths = {4, 3, 1}}}) {
    SCOPED_TRACE(Describe(c, dtype));
    const auto make = [&](int64_t len, int64_t d, uint64_t stream) {
      return OnDevice(Normal({c.batch, len, c.heads, d}, stream), dtype, gpu);
    };
    const Tensor q = make(c.q_len, c.d_k, 1), k = make(c.k_len, c.d_k, 2);
    const Tensor v = make(c.k_len, c.d_v, 3), d_out = make(c.q_len, c.d_v, 4);
    for (PackedHeads packed : {PackedHeads::kQueriesKeysValues, PackedHeads::kKeysValues}) {
      SCOPED_TRACE(packed == PackedHeads::kKeysValues ? "kv" : "qkv");
      testing::ExpectPackedEqualsSeparate(q, k, v, d_out, OptionsFor(c, gpu), packed,
                                          gradient_tolerance);
    }
  }
}

TEST_P(AttentionCudaTest, PackedProjectionsMatchSeparateOnes) {
  TFM_SKIP_WITHOUT_GPU();
  const ScopedDeterministicKernels deterministic;
  ExpectPackedMatchesSeparate(GetParam(), /*gradient_tolerance=*/0);
}

TEST_P(AttentionCudaTest, PackedProjectionsFollowSeparateOnesWithTheFastKernels) {
  TFM_SKIP_WITHOUT_GPU();
  const DType dtype = GetParam();
  ExpectPackedMatchesSeparate(dtype, dtype == DType::kF32 ? 1e-5 : 1e-2);
}

// The same with the fast kernels training runs by default: dQ added with
// float atomics into a heads-first buffer and scattered back (several key
// tiles), cuDNN's backward behind the op's permutes (bf16, long, no
// dropout). The order of the atomics varies, so the gradients are compared
// within a share of their largest value: one 16-bit rounding step, or f32's
// last bits.
TEST_P(AttentionCudaTest, InterleavedHeadsFollowHeadsFirstWithTheFastKernels) {
  TFM_SKIP_WITHOUT_GPU();
  const DType dtype = GetParam();
  ExpectInterleavedMatchesHeadsFirst(dtype, dtype == DType::kF32 ? 1e-5 : 1e-2);
}

TEST(AttentionCudaSpeed, DISABLED_BFloat16HeadSize64) {
  TFM_SKIP_WITHOUT_GPU();
  const Device gpu = Device::Cuda(0);
  struct Size {
    int64_t batch, len;
    bool causal, padded;
  };
  const std::vector<Size> sizes = {{256, 64, false, true},   {128, 128, false, true},
                                   {32, 512, false, true},   {16, 1024, false, true},
                                   {4, 4096, false, false},  {4, 4096, true, false},
                                   {1, 16384, false, false}, {1, 16384, true, false}};
  constexpr int64_t kHeads = 8, kHeadSize = 64;
  for (const Size& size : sizes) {
    const Shape shape = {size.batch, kHeads, size.len, kHeadSize};
    const Tensor q = OnDevice(Normal(shape, 1), DType::kBF16, gpu);
    const Tensor k = OnDevice(Normal(shape, 2), DType::kBF16, gpu);
    const Tensor v = OnDevice(Normal(shape, 3), DType::kBF16, gpu);
    const Tensor d_out = OnDevice(Normal(shape, 4), DType::kBF16, gpu);
    Case c{.batch = size.batch,
           .heads = kHeads,
           .q_len = size.len,
           .k_len = size.len,
           .d_k = kHeadSize,
           .d_v = kHeadSize,
           .causal = size.causal};
    double pairs = 0;  // Visible (query, key) pairs.
    for (int64_t b = 0; b < size.batch; ++b) {
      // Padded batches: lengths spread over [len / 2, len].
      const int64_t length =
          size.padded ? size.len / 2 + (b * 7919) % (size.len / 2 + 1) : size.len;
      if (size.padded) c.key_lengths.push_back(length);
      pairs += double(size.len) * length * (size.causal ? 0.5 : 1.0);
    }
    c.as_padding_mask = size.padded;
    const AttentionOptions options = OptionsFor(c, gpu);
    absl::StatusOr<AttentionOutput> fwd;
    absl::StatusOr<AttentionGrads> grads;
    const auto time = [&](const auto& run) -> double {
      run();  // Warm-up: caches, shared-memory limits.
      EXPECT_TRUE(cuda::Synchronize(0).ok());
      constexpr int kRuns = 10;
      const absl::Time start = absl::Now();
      for (int i = 0; i < kRuns; ++i) run();
      EXPECT_TRUE(cuda::Synchronize(0).ok());
      return absl::ToDoubleSeconds(absl::Now() - start) / kRuns;
    };
    const double forward_s = time([&] { fwd = ScaledDotProductAttention(q, k, v, options); });
    ASSERT_TRUE(fwd.ok()) << fwd.status();
    const double backward_s = time([&] {
      grads = ScaledDotProductAttentionBackward(q, k, v, fwd->out, fwd->lse, d_out, options);
    });
    ASSERT_TRUE(grads.ok()) << grads.status();
    const double flop = 4.0 * kHeads * kHeadSize * pairs;
    std::printf(
        "batch %3lld len %5lld %-9s %-6s forward %8.3f ms %6.1f TFLOP/s   backward %8.3f "
        "ms %6.1f TFLOP/s\n",
        static_cast<long long>(size.batch), static_cast<long long>(size.len),
        size.causal ? "causal" : "full", size.padded ? "padded" : "", forward_s * 1e3,
        flop / forward_s * 1e-12, backward_s * 1e3, 2.5 * flop / backward_s * 1e-12);
  }
}

// Runs everywhere: the CPU kernels are f32 only, and say so.
TEST(AttentionCudaTest, BFloat16OnCpuIsRejected) {
  const Tensor q = Rounded(Normal({1, 1, 4, 8}, 1), DType::kBF16);
  absl::StatusOr<AttentionOutput> out = ScaledDotProductAttention(q, q, q);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("no kernel for CPU/bf16"), std::string::npos)
      << out.status();
}

TEST(AttentionBackendTest, ResolvesSettings) {
  EXPECT_EQ(*ResolveAttentionBackend(""), AttentionBackend::kAuto);
  EXPECT_EQ(*ResolveAttentionBackend("auto"), AttentionBackend::kAuto);
  EXPECT_EQ(*ResolveAttentionBackend("Flash"), AttentionBackend::kFlash);
  EXPECT_EQ(*ResolveAttentionBackend("cudnn"), AttentionBackend::kCudnn);
  EXPECT_EQ(*ResolveAttentionBackend("flash_tiles"), AttentionBackend::kFlashTiles);
  EXPECT_FALSE(ResolveAttentionBackend("fast").ok());
  Attrs attrs;
  attrs.Set("backend", std::string("flash"));
  EXPECT_EQ(*AttentionBackendFor(attrs), AttentionBackend::kFlash);
  attrs.Set("backend", std::string("nonsense"));
  EXPECT_FALSE(AttentionBackendFor(attrs).ok());
}

INSTANTIATE_TEST_SUITE_P(DTypes, AttentionCudaTest,
                         ::testing::Values(DType::kF32, DType::kBF16, DType::kF16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace tfm
