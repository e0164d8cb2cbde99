#include "ops/cpu_math/row_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_math/isa.h"

// Compiled once per instruction set (tfm_isa_test).
TFM_ISA_BEGIN
namespace cpu_math {
namespace {

TEST(RowMathTest, ExpMatchesLibmOverTheWholeRange) {
  double worst = 0;
  for (float v = -87.0f; v <= 0.0f; v += 0.000731f) {
    const double exact = std::exp(static_cast<double>(v));
    worst = std::max(worst, std::abs(ExpNonPositive(v) - exact) / exact);
  }
  EXPECT_LT(worst, 3e-7);  // ~2.5 float ulps.
  EXPECT_EQ(ExpNonPositive(0.0f), 1.0f);
  EXPECT_EQ(ExpNonPositive(-100.0f), 0.0f);
  EXPECT_EQ(ExpNonPositive(-std::numeric_limits<float>::infinity()), 0.0f);
  // NaN propagates (and never reaches an integer conversion: UBSan checks).
  EXPECT_TRUE(std::isnan(ExpNonPositive(std::numeric_limits<float>::quiet_NaN())));
}

TEST(RowMathTest, SumAndMaxCoverTails) {
  std::vector<float> values(19);
  for (int i = 0; i < 19; ++i) values[i] = static_cast<float>(i) - 9.0f;
  EXPECT_EQ(LaneSum(19, [&](int64_t i) { return values[i]; }), 0.0f);
  EXPECT_EQ(LaneMax(values.data(), 19), 9.0f);
  EXPECT_EQ(LaneMax(values.data(), 3), -7.0f);
  EXPECT_EQ(LaneMax(values.data(), 0), -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace cpu_math
TFM_ISA_END
