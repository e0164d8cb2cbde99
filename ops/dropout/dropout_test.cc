#include "ops/dropout/dropout.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/philox.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::CheckGradients;
using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::Tolerance;
using ::tfm::testing::TorchReference;

constexpr PhiloxState kState{21, 3, 1000};

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{19, stream, 0}, -1.0f, 1.0f);
}

// The uniforms dropout compares against p: those of random_uniform with the
// same state, by the Philox layout contract (see dropout.h).
Tensor Uniforms(const Shape& shape) { return *RandomUniform(shape, kState, 0.0f, 1.0f); }

TEST(DropoutTest, IdentityAtZeroAndEmptyAtOne) {
  const Tensor x = Random({5, 7}, 1);
  absl::StatusOr<Tensor> same = Dropout(x, 0.0, kState);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->ToVector<float>(), x.ToVector<float>());
  EXPECT_EQ(Dropout(x, 1.0, kState)->ToVector<float>(), std::vector<float>(35, 0.0f));
}

// p = 0 returns equal values in a new tensor, forward and backward (both
// flavours): writing into a result, as gradient accumulation does, must
// leave the caller's input alone.
TEST(DropoutTest, IdentityIsACopyNotAnAlias) {
  const Tensor x = Random({5, 7}, 1);
  const std::vector<float> before = x.ToVector<float>();
  absl::StatusOr<Tensor> forward = Dropout(x, 0.0, kState);
  absl::StatusOr<Tensor> backward = DropoutBackward(x, 0.0, kState);
  absl::StatusOr<DropoutOutput> with_mask = DropoutWithMask(x, 0.0, kState);
  ASSERT_TRUE(forward.ok() && backward.ok() && with_mask.ok());
  absl::StatusOr<Tensor> backward_masked = DropoutBackwardMasked(x, 0.0, with_mask->mask);
  ASSERT_TRUE(backward_masked.ok()) << backward_masked.status();
  for (Tensor result : {*forward, *backward, with_mask->out, *backward_masked}) {
    EXPECT_FALSE(result.SharesBufferWith(x));
    EXPECT_EQ(result.ToVector<float>(), before);
    for (float& value : result.span<float>()) value = -1.0f;
  }
  EXPECT_EQ(x.ToVector<float>(), before);
}

TEST(DropoutTest, DropsAboutPAndIsReproducible) {
  const Tensor x = *RandomUniform({100003}, kState, 1.0f, 2.0f);  // Never 0.
  const Tensor y = *Dropout(x, 0.3, kState);
  int64_t dropped = 0;
  for (float v : y.span<float>()) dropped += v == 0.0f;
  EXPECT_NEAR(dropped / 100003.0, 0.3, 0.005);
  EXPECT_EQ(Dropout(x, 0.3, kState)->ToVector<float>(), y.ToVector<float>());
  EXPECT_NE(Dropout(x, 0.3, PhiloxState{21, 3, 1001})->ToVector<float>(), y.ToVector<float>());
}

TEST(DropoutTest, Gradients) {
  auto forward = [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = Dropout(in[0], 0.4, kState);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  auto backward = [](const std::vector<Tensor>&, const std::vector<Tensor>&,
                     const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> dx = DropoutBackward(dout[0], 0.4, kState);
    if (!dx.ok()) return dx.status();
    return std::vector<Tensor>{*dx};
  };
  EXPECT_TRUE(CheckGradients(forward, backward, {Random({6, 11}, 1)}));
}

// PyTorch's generator differs from Philox, so the peer gets our uniforms
// and applies its own masking and scaling formula; odd sizes check the
// partial last block.
TEST(DropoutTest, MatchesTorchGivenTheUniforms) {
  NamedTensors inputs = {{"x1", Random({3, 5}, 1)},      {"dy1", Random({3, 5}, 2)},
                         {"u1", Uniforms({3, 5})},       {"x2", Random({513, 129}, 3)},
                         {"dy2", Random({513, 129}, 4)}, {"u2", Uniforms({513, 129})}};
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      p = 0.1
      y1 = x1 * (u1 >= p) / (1 - p)
      dx1, = grads(y1, dy1, [x1])
      y2 = x2 * (u2 >= p) / (1 - p)
      dx2, = grads(y2, dy2, [x2])
  )py",
                                                    inputs, {"y1", "dx1", "y2", "dx2"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const std::string i : {"1", "2"}) {
    absl::StatusOr<Tensor> y = Dropout(inputs.at("x" + i), 0.1, kState);
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<Tensor> dx = DropoutBackward(inputs.at("dy" + i), 0.1, kState);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TRUE(AllClose(*y, ref->at("y" + i))) << i;
    EXPECT_TRUE(AllClose(*dx, ref->at("dx" + i))) << i;
  }
}

// The kernel's vector body (8 Philox blocks at a time) and its scalar tail
// must both follow the layout exactly: compare every element, at sizes that
// end inside a vector group and inside a block, with a counter that crosses
// 2^32 mid-tensor, forward and backward.
TEST(DropoutTest, EveryElementFollowsThePhiloxLayout) {
  for (const int64_t n : {1, 3, 31, 32, 33, 129, 1001, 70001}) {
    for (const PhiloxState state :
         {kState, PhiloxState{5, 0xABCDEF0123ull, (uint64_t{1} << 32) - 37}}) {
      const Tensor x = Random({n}, 1);
      const Tensor y = *Dropout(x, 0.25, state);
      const Tensor dx = *DropoutBackward(x, 0.25, state);
      const float scale = static_cast<float>(1.0 / (1.0 - 0.25));
      const float* in = x.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        const philox::Uint4 block = philox::Block(state.seed, state.stream, state.offset + i / 4);
        const bool keep = philox::ToUniform(philox::Lane(block, i % 4)) >= 0.25f;
        const float expected = keep ? in[i] * scale : 0.0f;
        ASSERT_EQ(y.data<float>()[i], expected) << n << " " << i;
        ASSERT_EQ(dx.data<float>()[i], expected) << n << " " << i;
      }
    }
  }
}

// DropoutWithMask's output is Dropout's, its bits are the keep decisions,
// and the masked backward equals the regenerating one bit for bit (vector
// words, the ragged last word, p = 0 and p = 1).
TEST(DropoutTest, PackedMaskMatchesRegeneration) {
  for (const int64_t n : {1, 31, 32, 33, 100, 70001}) {
    for (const double p : {0.0, 0.1, 0.5, 1.0}) {
      const Tensor x = Random({n}, 5), dy = Random({n}, 6);
      absl::StatusOr<DropoutOutput> fwd = DropoutWithMask(x, p, kState);
      ASSERT_TRUE(fwd.ok()) << fwd.status();
      EXPECT_EQ(fwd->out.ToVector<float>(), Dropout(x, p, kState)->ToVector<float>()) << n << p;
      ASSERT_EQ(fwd->mask.num_elements(), DropoutMaskWords(n));
      const uint32_t* bits = reinterpret_cast<const uint32_t*>(fwd->mask.data<int32_t>());
      for (int64_t i = 0; i < 32 * DropoutMaskWords(n); ++i) {
        const bool bit = (bits[i / 32] >> (i % 32)) & 1u;
        if (i >= n) {
          ASSERT_FALSE(bit) << n << " " << p << " " << i;
          continue;
        }
        const philox::Uint4 block =
            philox::Block(kState.seed, kState.stream, kState.offset + i / 4);
        ASSERT_EQ(bit, philox::ToUniform(philox::Lane(block, i % 4)) >= static_cast<float>(p))
            << n << " " << p << " " << i;
      }
      absl::StatusOr<Tensor> masked = DropoutBackwardMasked(dy, p, fwd->mask);
      ASSERT_TRUE(masked.ok()) << masked.status();
      const std::vector<float> expected = DropoutBackward(dy, p, kState)->ToVector<float>();
      const std::vector<float> got = masked->ToVector<float>();
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &expected[i], sizeof(float)), 0)
            << n << " " << p << " " << i;
      }
    }
  }
  const Tensor wrong = *Tensor::Zeros({3}, DType::kI32);
  absl::Status status = DropoutBackwardMasked(Random({100}, 1), 0.1, wrong).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("mask must be i32[4]"), std::string::npos) << status;
}

TEST(DropoutTest, KeptNaNsStayNaN) {
  std::vector<float> values(40, std::numeric_limits<float>::quiet_NaN());
  const Tensor x = *Tensor::FromVector<float>(values, {40});
  const Tensor y = *Dropout(x, 0.5, kState);
  int64_t nans = 0, zeros = 0;
  for (float v : y.span<float>()) {
    nans += std::isnan(v);
    zeros += v == 0.0f;
  }
  EXPECT_EQ(nans + zeros, 40);
  EXPECT_GT(nans, 0);
  EXPECT_GT(zeros, 0);
}

// Same bits: both host tensors of one shape and dtype hold the same bytes.
::testing::AssertionResult SameBits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    return ::testing::AssertionFailure() << a.DebugString() << " vs " << b.DebugString();
  }
  if (std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "bytes differ";
  }
  return ::testing::AssertionSuccess();
}

// f32 on CUDA is the CPU's dropout bit for bit: outputs, packed masks, both
// backwards, at sizes around the 4-element Philox blocks, the 32-bit mask
// words and the 128-element warps, on aligned tensors and on views one
// element in (the element-wise path).
TEST(DropoutTest, CudaMatchesCpuBitForBit) {
  TFM_SKIP_WITHOUT_GPU();
  for (const int64_t n : {1, 3, 31, 32, 33, 100, 129, 4097, 70001, (1 << 20) + 3}) {
    for (const int64_t skip : {0, 1}) {
      const Tensor x_all = Random({n + skip}, 5), dy_all = Random({n + skip}, 6);
      const Tensor x = *x_all.Slice(skip, n + skip), dy = *dy_all.Slice(skip, n + skip);
      const Tensor x_gpu = *OnCuda(x_all).Slice(skip, n + skip);
      const Tensor dy_gpu = *OnCuda(dy_all).Slice(skip, n + skip);
      for (const double p : {0.0, 0.1, 0.5, 1.0}) {
        SCOPED_TRACE(::testing::Message() << "n " << n << " skip " << skip << " p " << p);
        absl::StatusOr<Tensor> y = Dropout(x_gpu, p, kState);
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_TRUE(SameBits(HostF32(*y), *Dropout(x, p, kState)));
        absl::StatusOr<DropoutOutput> fwd = DropoutWithMask(x_gpu, p, kState);
        ASSERT_TRUE(fwd.ok()) << fwd.status();
        const DropoutOutput fwd_cpu = *DropoutWithMask(x, p, kState);
        EXPECT_TRUE(SameBits(HostF32(fwd->out), fwd_cpu.out));
        EXPECT_TRUE(SameBits(*CopyToDevice(fwd->mask, Device::Cpu()), fwd_cpu.mask));
        absl::StatusOr<Tensor> dx = DropoutBackward(dy_gpu, p, kState);
        ASSERT_TRUE(dx.ok()) << dx.status();
        const Tensor dx_cpu = *DropoutBackward(dy, p, kState);
        EXPECT_TRUE(SameBits(HostF32(*dx), dx_cpu));
        absl::StatusOr<Tensor> dx_masked = DropoutBackwardMasked(dy_gpu, p, fwd->mask);
        ASSERT_TRUE(dx_masked.ok()) << dx_masked.status();
        EXPECT_TRUE(SameBits(HostF32(*dx_masked), dx_cpu));
      }
    }
  }
}

// f16 and bf16 on CUDA: the same mask as f32 on the CPU, and values within
// one rounding of the f32 CPU kernel on the rounded inputs.
TEST(DropoutTest, CudaHalfPrecisionMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const Tolerance rounding{.atol = 1e-2, .rtol = 1e-2};
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    // skip 1: views one element in, not 16-byte aligned (the block path).
    for (const auto& [n, skip] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 0}, {33, 0}, {129, 0}, {4099, 0}, {70001, 0}, {(1 << 20) + 5, 0},
             {33, 1}, {4099, 1}, {70001, 1}}) {
      const Tensor x_all = RoundedThrough(Random({n + skip}, 5), dtype);
      const Tensor dy_all = RoundedThrough(Random({n + skip}, 6), dtype);
      const Tensor x = *x_all.Slice(skip, n + skip), dy = *dy_all.Slice(skip, n + skip);
      const Tensor x_gpu = *OnCuda(HostAs(x_all, dtype)).Slice(skip, n + skip);
      const Tensor dy_gpu = *OnCuda(HostAs(dy_all, dtype)).Slice(skip, n + skip);
      for (const double p : {0.0, 0.1, 0.5}) {
        SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " n " << n << " skip " << skip
                                          << " p " << p);
        absl::StatusOr<DropoutOutput> fwd = DropoutWithMask(x_gpu, p, kState);
        ASSERT_TRUE(fwd.ok()) << fwd.status();
        EXPECT_EQ(fwd->out.dtype(), dtype);
        const DropoutOutput fwd_cpu = *DropoutWithMask(x, p, kState);
        EXPECT_TRUE(AllClose(HostF32(fwd->out), fwd_cpu.out, rounding));
        EXPECT_TRUE(SameBits(*CopyToDevice(fwd->mask, Device::Cpu()), fwd_cpu.mask));
        EXPECT_TRUE(AllClose(HostF32(*Dropout(x_gpu, p, kState)), fwd_cpu.out, rounding));
        const Tensor dx_cpu = *DropoutBackward(dy, p, kState);
        EXPECT_TRUE(AllClose(HostF32(*DropoutBackward(dy_gpu, p, kState)), dx_cpu, rounding));
        EXPECT_TRUE(
            AllClose(HostF32(*DropoutBackwardMasked(dy_gpu, p, fwd->mask)), dx_cpu, rounding));
      }
    }
  }
}

// A tensor larger than one pass of the kernel's grid (8192 blocks of 256
// threads, 4 packs of 4 f32 each: 33.5M elements), so that threads take
// several grid steps: still the CPU's bits.
TEST(DropoutTest, CudaGridStepsMatchCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t n = 70 * (int64_t{1} << 20) + 37;
  const Tensor x = Random({n}, 7);
  const Tensor x_gpu = OnCuda(x);
  const DropoutOutput cpu = *DropoutWithMask(x, 0.1, kState);
  absl::StatusOr<DropoutOutput> gpu = DropoutWithMask(x_gpu, 0.1, kState);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_TRUE(SameBits(HostF32(gpu->out), cpu.out));
  EXPECT_TRUE(SameBits(*CopyToDevice(gpu->mask, Device::Cpu()), cpu.mask));
  absl::StatusOr<Tensor> y = Dropout(x_gpu, 0.1, kState);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(SameBits(HostF32(*y), cpu.out));
}

TEST(DropoutTest, BadArgumentsNameTheOp) {
  absl::Status status = Dropout(Random({2, 3}, 1), 1.5, kState).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("dropout: p = 1.5 is not in [0, 1]"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[2, 3]"), std::string::npos) << status;
  EXPECT_EQ(Dropout(Random({2}, 1), NAN, kState).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DropoutBackward(Random({2}, 1), -0.1, kState).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
