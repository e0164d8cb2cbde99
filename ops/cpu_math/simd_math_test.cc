#include "ops/cpu_math/simd_math.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_math/isa.h"

// Compiled once per instruction set (tfm_isa_test).
TFM_ISA_BEGIN
namespace simd {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Sizes around both vector widths (8 and 16 lanes) exercise the unrolled
// body, the one-vector step and the masked tail.
constexpr int kSizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100};

// ReduceSums gives each vector's ReduceSum, bit for bit, in lane order. The
// values span many magnitudes, so another order of additions would round
// differently: checked below, so that the equality means the same tree.
TEST(SimdMathTest, ReduceSumsIsEachVectorsReduceSumBitForBit) {
  for (int trial = 0; trial < 50; ++trial) {
    VecF vectors[kLanes];
    float lanes[kLanes][kLanes];
    for (int v = 0; v < kLanes; ++v) {
      for (int i = 0; i < kLanes; ++i) {
        lanes[v][i] = std::sin(1.3f * (trial * 257 + v * 17 + i)) *
                      std::pow(10.0f, static_cast<float>((v + 3 * i + trial) % 9) - 4.0f);
      }
      vectors[v] = Load(lanes[v]);
    }
    float sums[kLanes];
    Store(ReduceSums(vectors), sums);
    for (int v = 0; v < kLanes; ++v) {
      const float expected = ReduceSum(vectors[v]);
      EXPECT_EQ(std::memcmp(&sums[v], &expected, sizeof(float)), 0)
          << "trial " << trial << " vector " << v << ": " << sums[v] << " against " << expected;
    }
  }
  // The data is order-sensitive: left-to-right sums differ from the tree's
  // somewhere.
  int differing = 0;
  for (int trial = 0; trial < 50; ++trial) {
    for (int v = 0; v < kLanes; ++v) {
      float lanes[kLanes], serial = 0.0f;
      for (int i = 0; i < kLanes; ++i) {
        lanes[i] = std::sin(1.3f * (trial * 257 + v * 17 + i)) *
                   std::pow(10.0f, static_cast<float>((v + 3 * i + trial) % 9) - 4.0f);
        serial += lanes[i];
      }
      differing += serial != ReduceSum(Load(lanes));
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(SimdMathTest, MaxOrNaNFindsTheMaxAndAnyNaN) {
  for (int n : kSizes) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = std::sin(1.7f * i) * 10.0f;
    float expected = -kInf;
    for (float v : x) expected = std::max(expected, v);
    EXPECT_EQ(MaxOrNaN(x.data(), n), expected) << n;
    for (int at = 0; at < n; at += 3) {
      std::vector<float> with_nan = x;
      with_nan[at] = kNaN;
      EXPECT_TRUE(std::isnan(MaxOrNaN(with_nan.data(), n))) << n << " " << at;
    }
  }
}

TEST(SimdMathTest, ExpShiftedSumToMatchesTheInPlaceVersion) {
  for (int n : kSizes) {
    std::vector<float> x(n);
    for (int i = 0; i < n; ++i) x[i] = std::cos(0.3f * i) * 20.0f;
    if (n > 2) x[2] = -kInf;
    std::vector<float> in_place = x, y(n);
    const float sum = ExpShiftedSumTo(x.data(), y.data(), n, 3.0f);
    ExpShiftedSum(in_place.data(), n, 3.0f);
    double expected_sum = 0;
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(y[i], in_place[i]) << n << " " << i;
      // Against exp of the same float argument: ~2 ulp.
      const double exact = std::exp(static_cast<double>(x[i] - 3.0f));
      EXPECT_NEAR(y[i], exact, 3e-7 * exact) << n << " " << i;
      expected_sum += y[i];
    }
    EXPECT_NEAR(sum, expected_sum, 1e-5 * expected_sum + 1e-30) << n;
  }
}

TEST(SimdMathTest, AddCoversVectorsAndTails) {
  for (int n : kSizes) {
    std::vector<float> x(n), y(n), z(n + 1, -1.0f);
    for (int i = 0; i < n; ++i) {
      x[i] = 0.5f * i;
      y[i] = std::sin(static_cast<float>(i));
    }
    Add(x.data(), y.data(), z.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_EQ(z[i], x[i] + y[i]) << n << " " << i;
    EXPECT_EQ(z[n], -1.0f) << n;  // Nothing written past the end.
  }
}

}  // namespace
}  // namespace simd
TFM_ISA_END
