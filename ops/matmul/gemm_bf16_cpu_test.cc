#include "ops/matmul/gemm_bf16_cpu.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace {

uint32_t Bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return bits;
}

// A value rounded to bf16 (to nearest, ties to even), as the products see it.
float Rounded(float x) { return static_cast<float>(BFloat16(x)); }

using Kernel = void (*)(const GemmOperand&, const GemmOperand&, int64_t, int64_t, int64_t, float,
                        float*, ThreadPool*, const GemmEpilogue&);

struct Case {
  int64_t m, n, k;
  bool trans_a, trans_b;
  float beta;
  bool bias = false, relu = false;
};

// Checks kernel's C against the sums, in double, of the rounded inputs'
// products: within f32 summation's bound, k * 2^-24 of the sum of |terms|.
void ExpectRoundedProduct(Kernel kernel, const Case& t, ThreadPool* pool) {
  std::mt19937 rng(static_cast<uint32_t>(t.m * 1000003 + t.n * 1009 + t.k));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(t.m * t.k), b(t.k * t.n), c(t.m * t.n);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (float& x : c) x = t.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : normal(rng);
  std::vector<float> bias(t.n);
  for (float& x : bias) x = normal(rng);
  const std::vector<float> c_before = c;
  const GemmOperand op_a{a.data(), t.trans_a ? t.m : t.k, t.trans_a};
  const GemmOperand op_b{b.data(), t.trans_b ? t.k : t.n, t.trans_b};
  kernel(op_a, op_b, t.m, t.n, t.k, t.beta, c.data(), pool,
         GemmEpilogue{t.bias ? bias.data() : nullptr, t.relu});
  const std::string where = "m " + std::to_string(t.m) + " n " + std::to_string(t.n) + " k " +
                            std::to_string(t.k) + " trans " + std::to_string(t.trans_a) +
                            std::to_string(t.trans_b) + " beta " + std::to_string(t.beta) +
                            (t.bias ? " bias" : "") + (t.relu ? " relu" : "");
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < t.n; ++j) {
      double sum = 0.0, magnitude = 0.0;
      for (int64_t p = 0; p < t.k; ++p) {
        const double term =
            static_cast<double>(Rounded(t.trans_a ? a[p * t.m + i] : a[i * t.k + p])) *
            Rounded(t.trans_b ? b[j * t.k + p] : b[p * t.n + j]);
        sum += term;
        magnitude += std::fabs(term);
      }
      if (t.beta != 0.0f) {
        sum += static_cast<double>(t.beta) * c_before[i * t.n + j];
        magnitude += std::fabs(t.beta * c_before[i * t.n + j]);
      }
      if (t.bias) {
        sum += bias[j];
        magnitude += std::fabs(bias[j]);
      }
      const double bound = (t.k + 3) * std::ldexp(1.0, -24) * magnitude + 1e-30;
      if (t.relu && sum <= bound) {  // ReLU's edge: either side of 0 is +0 or the sum.
        ASSERT_TRUE(c[i * t.n + j] == 0.0f || std::fabs(c[i * t.n + j] - sum) <= bound)
            << where << " at " << i << ", " << j;
        if (c[i * t.n + j] == 0.0f) ASSERT_FALSE(std::signbit(c[i * t.n + j])) << where;
        continue;
      }
      ASSERT_NEAR(c[i * t.n + j], sum, bound) << where << " at " << i << ", " << j;
    }
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const int64_t extents[][3] = {{1, 1, 1},    {1, 40, 70},  {17, 1, 33},   {32, 32, 32},
                                {33, 16, 31}, {70, 95, 64}, {64, 48, 100}, {100, 200, 257}};
  for (const auto& e : extents) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 1.0f}) cases.push_back({e[0], e[1], e[2], ta, tb, beta});
      }
    }
    // Linear's forward: x W^T + bias, with and without ReLU.
    cases.push_back({e[0], e[1], e[2], false, true, 0.0f, true, false});
    cases.push_back({e[0], e[1], e[2], false, true, 0.0f, true, true});
  }
  return cases;
}

TEST(GemmBf16Test, RoundedInputsThroughTheF32Gemm) {
  ThreadPool pool(2);
  for (const Case& t : Cases()) ExpectRoundedProduct(&GemmBf16OfRounded, t, &pool);
}

TEST(GemmBf16Test, AmxTiles) {
  if (!HostCpuFeatures().amx_bf16) GTEST_SKIP() << "this CPU has no usable AMX-BF16 tiles";
  ThreadPool pool(2);
  for (const Case& t : Cases()) ExpectRoundedProduct(&GemmBf16Amx, t, &pool);
}

// Each element's sum runs in one order whatever the thread count.
TEST(GemmBf16Test, AmxBitsDoNotDependOnThreads) {
  if (!HostCpuFeatures().amx_bf16) GTEST_SKIP() << "this CPU has no usable AMX-BF16 tiles";
  const int64_t m = 200, n = 150, k = 300;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(m * k), b(n * k);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  std::vector<float> one(m * n), three(m * n);
  ThreadPool pool1(1), pool3(3);
  GemmBf16Amx({a.data(), k, false}, {b.data(), k, true}, m, n, k, 0.0f, one.data(), &pool1);
  GemmBf16Amx({a.data(), k, false}, {b.data(), k, true}, m, n, k, 0.0f, three.data(), &pool3);
  EXPECT_EQ(one, three);
}

// Linear's forward in either precision: bias and ReLU applied (ReLU keeps
// NaN, and a zero comes out +0), through whichever bf16 kernel this CPU has.
TEST(GemmBf16Test, LinearGemmFollowsTheScopedPrecision) {
  const float x = 1.0f + std::ldexp(1.0f, -9);  // bf16 rounds it to 1.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // rows 1 x in 2 against 4 outputs: W rows (x, x), (-x, -x), (x, x), (0, 0).
  const std::vector<float> input = {x, x}, weight = {x, x, -x, -x, x, x, 0, 0};
  const std::vector<float> bias = {0.5f, 0.0f, nan, -0.0f};
  for (bool bf16 : {false, true}) {
    ScopedCpuProductPrecision scope(bf16 ? CpuProductPrecision::kBf16 : CpuProductPrecision::kF32);
    const float product = bf16 ? 2.0f : 2.0f * x * x;
    std::vector<float> y(4, 7.0f);
    LinearGemmCpu(1, 4, 2, input.data(), weight.data(), bias.data(), /*relu=*/true, y.data());
    EXPECT_EQ(y[0], product + 0.5f) << bf16;
    EXPECT_EQ(y[1], 0.0f) << bf16;
    EXPECT_TRUE(std::isnan(y[2])) << bf16;
    EXPECT_EQ(Bits(y[3]), 0u) << bf16;  // +0, never -0.
    LinearGemmCpu(1, 4, 2, input.data(), weight.data(), nullptr, /*relu=*/false, y.data());
    EXPECT_EQ(y[0], product) << bf16;
    EXPECT_EQ(y[1], -product) << bf16;
  }
}

// GemmCpu multiplies bf16 only while a scope asks for it.
TEST(GemmBf16Test, GemmCpuFollowsTheScopedPrecision) {
  const float x = 1.0f + std::ldexp(1.0f, -9);  // bf16 rounds it to 1.
  const std::vector<float> a = {x, x}, b = {x, x};
  float c = 0.0f;
  GemmCpu(false, false, 1, 1, 2, a.data(), b.data(), 0.0f, &c);
  EXPECT_EQ(c, 2.0f * x * x);
  EXPECT_EQ(CurrentCpuProductPrecision(), CpuProductPrecision::kF32);
  {
    ScopedCpuProductPrecision bf16(CpuProductPrecision::kBf16);
    GemmCpu(false, false, 1, 1, 2, a.data(), b.data(), 0.0f, &c);
    EXPECT_EQ(c, 2.0f);
    {
      ScopedCpuProductPrecision f32(CpuProductPrecision::kF32);
      GemmCpu(false, false, 1, 1, 2, a.data(), b.data(), 0.0f, &c);
      EXPECT_EQ(c, 2.0f * x * x);
    }
    EXPECT_EQ(CurrentCpuProductPrecision(), CpuProductPrecision::kBf16);
  }
  EXPECT_EQ(CurrentCpuProductPrecision(), CpuProductPrecision::kF32);
  GemmCpu(false, false, 1, 1, 2, a.data(), b.data(), 0.0f, &c);
  EXPECT_EQ(c, 2.0f * x * x);
}

// The tiles where the CPU has them and our kernels may use AVX-512; a
// failed start-up check on such a CPU shows here as a failure.
TEST(GemmBf16Test, KernelNameFollowsTheCpu) {
  const CpuFeatures& f = HostCpuFeatures();
  const bool amx = f.amx_bf16 && f.avx512_bf16 && ActiveCpuIsa() == CpuIsa::kAvx512;
  EXPECT_STREQ(Bf16ProductKernelName(), amx ? "amx_bf16" : "f32_of_rounded");
}

}  // namespace
}  // namespace tfm
