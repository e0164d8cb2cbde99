#include "core/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(DType::kF32), 4u);
  EXPECT_EQ(DTypeSize(DType::kF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBF16), 2u);
  EXPECT_EQ(DTypeSize(DType::kI32), 4u);
  EXPECT_EQ(DTypeSize(DType::kI64), 8u);
  EXPECT_EQ(DTypeSize(DType::kI8), 1u);
  EXPECT_EQ(DTypeOf<int8_t>::value, DType::kI8);
  for (DType dtype : AllDTypes()) {
    absl::StatusOr<DType> parsed = ParseDType(DTypeName(dtype));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, dtype);
  }
}

TEST(DTypeTest, UnknownNameListsKnownOnes) {
  absl::StatusOr<DType> parsed = ParseDType("f8");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("f32, f16, bf16, i32, i64, i8"), std::string::npos);
}

TEST(HalfTest, ExactValuesRoundTrip) {
  for (float value : {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, -65504.0f, 6.103515625e-05f,
                      5.9604644775390625e-08f /* smallest subnormal */}) {
    EXPECT_EQ(static_cast<float>(Half(value)), value) << value;
  }
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
}

TEST(HalfTest, RoundsToNearestEvenAndSaturatesToInfinity) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to even (1).
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9.
  EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(70000.0f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(BFloat16Test, RoundTripAndRounding) {
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(static_cast<float>(BFloat16(-3.5f)), -3.5f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7 in bf16: ties to even (1).
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_NEAR(static_cast<float>(BFloat16(3.14159f)), 3.14159f, 0.01f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
}

// The rounding the CPU's bf16 products take their inputs through
// (ops/matmul/gemm_bf16_cpu.h): bf16 keeps 7 fraction bits, so 1 + 2^-7 is
// 1's neighbour.
TEST(BFloat16Test, NearestTiesToEvenAndSpecialValues) {
  auto rounded = [](float x) { return static_cast<float>(BFloat16(x)); };
  EXPECT_EQ(rounded(1.0f + std::ldexp(1.0f, -9)), 1.0f);
  EXPECT_EQ(rounded(1.0f + 3 * std::ldexp(1.0f, -9)), 1.0f + std::ldexp(1.0f, -7));
  EXPECT_EQ(rounded(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));  // A tie.
  EXPECT_EQ(rounded(-2.5f), -2.5f);
  EXPECT_EQ(rounded(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  // A NaN whose payload lies only in the dropped bits stays NaN (quieted).
  const uint32_t low_payload_nan = 0x7F800001u;
  float nan;
  std::memcpy(&nan, &low_payload_nan, sizeof(nan));
  EXPECT_TRUE(std::isnan(rounded(nan)));
  EXPECT_EQ(BFloat16(nan).bits & 0x7FC0u, 0x7FC0u);
}

}  // namespace
}  // namespace tfm
