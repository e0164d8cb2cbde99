#include "ops/softmax/softmax.h"

#include <algorithm>
#include <cmath>
#include <string>

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
using ::tfm::testing::SumTolerance;
using ::tfm::testing::Tolerance;
using ::tfm::testing::TorchReference;

Tensor Random(const Shape& shape, uint64_t stream, float low = -3.0f, float high = 3.0f) {
  return *RandomUniform(shape, PhiloxState{29, stream, 0}, low, high);
}

// An i32 mask with about a quarter of the positions removed.
Tensor RandomIntMask(const Shape& shape, uint64_t stream) {
  const Tensor u = Random(shape, stream, 0.0f, 1.0f);
  Tensor mask = *Tensor::Empty(shape, DType::kI32);
  for (int64_t i = 0; i < u.num_elements(); ++i) mask.data<int32_t>()[i] = u.data<float>()[i] < 0.25f;
  return mask;
}

TEST(SoftmaxTest, ValuesAndFullyMaskedRows) {
  const Tensor x = *Tensor::FromVector<float>({0, 0, std::log(2.0f), 1, 2, 3}, {2, 3});
  const std::vector<float> y = Softmax(x)->ToVector<float>();
  EXPECT_NEAR(y[0], 0.25f, 1e-7);
  EXPECT_NEAR(y[2], 0.5f, 1e-7);
  const Tensor mask = *Tensor::FromVector<int32_t>({1, 1, 1, 0, 1, 0}, {2, 3});
  const std::vector<float> masked = MaskedSoftmax(x, mask)->ToVector<float>();
  EXPECT_EQ(std::vector<float>(masked.begin(), masked.begin() + 3), std::vector<float>(3, 0.0f));
  EXPECT_NEAR(masked[3], 1 / (1 + std::exp(2.0f)), 1e-7);
  EXPECT_EQ(masked[4], 0.0f);
}

// Unmasked rows take the vector path (16- and 8-wide steps, scalar tail);
// check every element against a double reference at sizes around those.
TEST(SoftmaxTest, VectorPathMatchesDoubleReference) {
  for (int64_t n : {1, 7, 8, 15, 16, 17, 33, 129}) {
    const Tensor x = Random({3, n}, 8, -20.0f, 20.0f);
    const Tensor y = *Softmax(x);
    for (int64_t r = 0; r < 3; ++r) {
      const float* xr = x.data<float>() + r * n;
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; ++i) max = std::max<double>(max, xr[i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(xr[i] - max);
      for (int64_t i = 0; i < n; ++i) {
        const double expected = std::exp(xr[i] - max) / sum;
        EXPECT_NEAR(y.data<float>()[r * n + i], expected, 1e-6 * expected + 1e-12) << n;
      }
    }
  }
}

// A NaN or +inf logit makes its row NaN (as in PyTorch) and leaves the other
// rows alone, wherever in the row (vector body or tail) it sits.
TEST(SoftmaxTest, NaNAndInfinityPoisonOnlyTheirRow) {
  for (const float bad : {NAN, INFINITY}) {
    for (int64_t at : {0, 5, 16, 18}) {
      Tensor x = Random({2, 19}, 9);
      x.data<float>()[at] = bad;
      const std::vector<float> y = Softmax(x)->ToVector<float>();
      float other_sum = 0;
      for (int64_t i = 0; i < 19; ++i) {
        EXPECT_TRUE(std::isnan(y[i])) << bad << " at " << at << ": " << i;
        other_sum += y[19 + i];
      }
      EXPECT_NEAR(other_sum, 1.0f, 1e-6);
    }
  }
}

TEST(SoftmaxTest, Gradients) {
  const Tensor x = Random({2, 3, 7}, 1, -1.0f, 1.0f);
  const Tensor mask = Random({3, 7}, 2, -1.0f, 1.0f);
  auto forward = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = MaskedSoftmax(in[0], mask);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  auto backward = [](const std::vector<Tensor>&, const std::vector<Tensor>& out,
                     const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> dx = SoftmaxBackward(dout[0], out[0]);
    if (!dx.ok()) return dx.status();
    return std::vector<Tensor>{*dx};
  };
  EXPECT_TRUE(CheckGradients(forward, backward, {x}));
}

// Unmasked, an additive causal mask over heads and a boolean padding mask
// [b, 1, 1, t], at a small and a long (n = 600) last axis.
TEST(SoftmaxTest, MatchesTorch) {
  Tensor causal = *Tensor::Zeros({9, 9}, DType::kF32);
  for (int i = 0; i < 9; ++i) {
    for (int j = i + 1; j < 9; ++j) causal.data<float>()[i * 9 + j] = -INFINITY;
  }
  NamedTensors inputs = {
      {"x1", Random({2, 5}, 1)},            {"dy1", Random({2, 5}, 2)},
      {"x2", Random({2, 3, 9, 9}, 3)},      {"m2", causal},
      {"dy2", Random({2, 3, 9, 9}, 4)},     {"x3", Random({2, 2, 4, 600}, 5)},
      {"m3", RandomIntMask({2, 1, 1, 600}, 6)}, {"dy3", Random({2, 2, 4, 600}, 7)},
  };
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y1 = torch.softmax(x1, -1)
      y2 = torch.softmax(x2 + m2, -1)
      y3 = torch.softmax(x3.masked_fill(m3 != 0, float('-inf')), -1)
      dx1, = grads(y1, dy1, [x1])
      dx2, = grads(y2, dy2, [x2])
      dx3, = grads(y3, dy3, [x3])
  )py", inputs, {"y1", "dx1", "y2", "dx2", "y3", "dx3"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::vector<absl::StatusOr<Tensor>> ys = {
      Softmax(inputs.at("x1")), MaskedSoftmax(inputs.at("x2"), inputs.at("m2")),
      MaskedSoftmax(inputs.at("x3"), inputs.at("m3"))};
  for (int i = 0; i < 3; ++i) {
    const std::string k = std::to_string(i + 1);
    ASSERT_TRUE(ys[i].ok()) << ys[i].status();
    absl::StatusOr<Tensor> dx = SoftmaxBackward(inputs.at("dy" + k), *ys[i]);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TRUE(AllClose(*ys[i], ref->at("y" + k))) << k;
    // dx sums dout * out over the row; the relative bar is on the row scale.
    EXPECT_TRUE(AllClose(*dx, ref->at("dx" + k), SumTolerance())) << k;
  }
}

// log_softmax against a double reference, including rows where softmax
// underflows (log-probabilities far below log(FLT_MIN) stay finite) and the
// non-finite rows' convention.
TEST(SoftmaxTest, LogSoftmaxMatchesDoubleReference) {
  for (int64_t n : {1, 7, 16, 33, 129}) {
    const Tensor x = Random({3, n}, 9, -200.0f, 200.0f);
    const Tensor y = *LogSoftmax(x);
    for (int64_t r = 0; r < 3; ++r) {
      const float* xr = x.data<float>() + r * n;
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < n; ++i) max = std::max<double>(max, xr[i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(xr[i] - max);
      for (int64_t i = 0; i < n; ++i) {
        const double expected = xr[i] - max - std::log(sum);
        const float got = y.data<float>()[r * n + i];
        ASSERT_TRUE(std::isfinite(got)) << n;
        EXPECT_NEAR(got, expected, 1e-6 * std::abs(expected) + 1e-6) << n;
      }
    }
  }
  const float inf = INFINITY;
  const std::vector<float> special =
      LogSoftmax(*Tensor::FromVector<float>({-inf, -inf, 1, NAN, 0, -inf}, {3, 2}))
          ->ToVector<float>();
  EXPECT_EQ(special[0], -inf);
  EXPECT_TRUE(std::isnan(special[2]) && std::isnan(special[3]));
  EXPECT_EQ(special[4], 0.0f);
  EXPECT_EQ(special[5], -inf);
}

TEST(SoftmaxTest, BadArgumentsNameTheOpAndShapes) {
  const Tensor x = Random({2, 3, 4}, 1);
  absl::Status status = MaskedSoftmax(x, Random({3, 5}, 2)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("masked_softmax: mask does not broadcast"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[3, 5]"), std::string::npos) << status;
  EXPECT_EQ(MaskedSoftmax(x, Random({2, 3}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MaskedSoftmax(x, Random({1, 2, 3, 4}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MaskedSoftmax(x, *Tensor::Zeros({4}, DType::kI64)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(MaskedSoftmax(x, *Tensor::Zeros({2, 1, 4}, DType::kI32)).ok());
  EXPECT_EQ(SoftmaxBackward(x, Random({2, 3, 5}, 3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Softmax(*Tensor::Zeros({}, DType::kF32)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Rows with a NaN, a +inf, only -inf, and NaN among -inf: the special
// values' paths on both devices.
Tensor WithSpecialRows(Tensor x) {
  const int64_t n = x.dim(-1);
  float* data = x.data<float>();
  if (NumRows(x.shape()) < 5 || n < 2) return x;
  data[0 * n + n / 2] = NAN;
  data[1 * n] = INFINITY;
  for (int64_t i = 0; i < n; ++i) data[2 * n + i] = -INFINITY;
  for (int64_t i = 0; i < n; ++i) data[3 * n + i] = -INFINITY;
  data[3 * n + n - 1] = NAN;
  return x;
}

// The CUDA kernels against the CPU ones: f32 to 1e-5, bf16 against the f32
// CPU kernel on the bf16-rounded inputs. Shapes: a warp per row (n <= 1024)
// and a block per row, odd widths, one element, no rows.
TEST(SoftmaxTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const Shape shapes[] = {{1, 1},    {6, 7}, {5, 33}, {2, 3, 1024}, {7, 1025},
                          {5, 5000}, {0, 5}, {2, 0},  {1100, 17}};
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
    const Tolerance tolerance{.atol = bf16 ? 1e-2 : 1e-5, .rtol = bf16 ? 1e-2 : 1e-5};
    const Tolerance sums{.atol = 0.0, .rtol = bf16 ? 1e-2 : 1e-5, .relative_to_max = true};
    uint64_t stream = 200;
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(ShapeToString(shape) + " " + std::string(DTypeName(dtype)));
      const Tensor x = WithSpecialRows(Random(shape, ++stream, -8.0f, 8.0f));
      const Tensor xr = RoundedThrough(x, dtype);
      const Tensor xc = OnCuda(HostAs(x, dtype));
      const Tensor cpu = *Softmax(xr);
      absl::StatusOr<Tensor> gpu = Softmax(xc);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_EQ(gpu->dtype(), dtype);
      EXPECT_TRUE(AllClose(HostF32(*gpu), cpu, tolerance));

      absl::StatusOr<Tensor> gpu_log = LogSoftmax(xc);
      ASSERT_TRUE(gpu_log.ok()) << gpu_log.status();
      EXPECT_TRUE(AllClose(HostF32(*gpu_log), *LogSoftmax(xr), tolerance));

      // The backward on finite rows only (NaN rows would make it all NaN).
      const Tensor y = *Softmax(Random(shape, ++stream, -4.0f, 4.0f));
      const Tensor dy = Random(shape, ++stream);
      const Tensor yr = RoundedThrough(y, dtype), dyr = RoundedThrough(dy, dtype);
      absl::StatusOr<Tensor> gpu_dx =
          SoftmaxBackward(OnCuda(HostAs(dy, dtype)), OnCuda(HostAs(y, dtype)));
      ASSERT_TRUE(gpu_dx.ok()) << gpu_dx.status();
      EXPECT_TRUE(AllClose(HostF32(*gpu_dx), *SoftmaxBackward(dyr, yr), sums));
    }
  }
}

// Masks as attention uses them: a causal [t, t] f32 mask against [b, h, t, t]
// scores, an i32 padding mask [b, 1, 1, t] (some rows fully removed), a full
// i32 mask, and a [h, 1, t] one that needs two broadcast axes.
TEST(SoftmaxTest, CudaMaskedMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t b = 3, h = 2, t = 37;
  Tensor causal = *Tensor::Empty({t, t}, DType::kF32);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < t; ++j) causal.data<float>()[i * t + j] = j > i ? -INFINITY : 0.0f;
  }
  Tensor padding = *Tensor::Zeros({b, 1, 1, t}, DType::kI32);
  for (int64_t j = 20; j < t; ++j) padding.data<int32_t>()[1 * t + j] = 1;
  for (int64_t j = 0; j < t; ++j) padding.data<int32_t>()[2 * t + j] = 1;  // All removed.
  const Tensor masks[] = {causal, padding, RandomIntMask({b, h, t, t}, 3),
                          RandomIntMask({h, 1, t}, 4), Random({b, 1, t, t}, 5)};
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
    const Tolerance tolerance{.atol = bf16 ? 1e-2 : 1e-5, .rtol = bf16 ? 1e-2 : 1e-5};
    for (int64_t width : {t, int64_t{1500}}) {
      const Tensor x = Random({b, h, t, width}, 6 + width);
      const Tensor xr = RoundedThrough(x, dtype);
      const Tensor xc = OnCuda(HostAs(x, dtype));
      for (const Tensor& mask : masks) {
        if (width != t) continue;  // These masks are [..., t].
        SCOPED_TRACE(mask.DebugString() + " " + std::string(DTypeName(dtype)));
        absl::StatusOr<Tensor> gpu = MaskedSoftmax(xc, OnCuda(mask));
        ASSERT_TRUE(gpu.ok()) << gpu.status();
        EXPECT_TRUE(AllClose(HostF32(*gpu), *MaskedSoftmax(xr, mask), tolerance));
      }
      // A block per row: a [width] mask broadcast over every row.
      const Tensor wide_mask = RandomIntMask({width}, 7);
      absl::StatusOr<Tensor> gpu = MaskedSoftmax(xc, OnCuda(wide_mask));
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_TRUE(AllClose(HostF32(*gpu), *MaskedSoftmax(xr, wide_mask), tolerance));
    }
  }
}

}  // namespace
}  // namespace tfm
