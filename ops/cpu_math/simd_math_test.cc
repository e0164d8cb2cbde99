#include "ops/cpu_math/simd_math.h"

#include <cmath>
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
