#include "ops/quantized_linear/int8_weight_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{5, stream, 0}, -1.0f, 1.0f);
}

// Shapes with partial panels (out % 16 != 0) and groups (in % 4 != 0).
const Shape kShapes[] = {{19, 7}, {16, 8}, {33, 50}, {1, 1}};

TEST(Int8WeightRowsTest, PackedRowsAreExactlyTheQuantizedWeight) {
  uint64_t stream = 1;
  for (const Shape& shape : kShapes) {
    const Tensor w = Random(shape, stream++);
    absl::StatusOr<Int8Rows> rows = QuantizeWeightRows(w);
    ASSERT_TRUE(rows.ok()) << rows.status();
    absl::StatusOr<QuantizedWeight> packed = PackInt8Rows(*rows);
    ASSERT_TRUE(packed.ok()) << packed.status();
    absl::StatusOr<QuantizedWeight> direct = QuantizeLinearWeight(w);
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_EQ(packed->packed.shape(), direct->packed.shape());
    EXPECT_EQ(packed->packed.ToVector<int8_t>(), direct->packed.ToVector<int8_t>());
    EXPECT_EQ(packed->scales.ToVector<float>(), direct->scales.ToVector<float>());
    EXPECT_EQ(packed->row_sums.ToVector<int32_t>(), direct->row_sums.ToVector<int32_t>());
  }
}

TEST(Int8WeightRowsTest, DequantizedRowsAreWithinHalfAStepOfTheWeight) {
  const Tensor w = Random({33, 50}, 9);
  absl::StatusOr<Int8Rows> rows = QuantizeWeightRows(w);
  ASSERT_TRUE(rows.ok()) << rows.status();
  absl::StatusOr<Tensor> back = DequantizeInt8Rows(*rows);
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<float> original = w.ToVector<float>(), restored = back->ToVector<float>();
  const std::vector<float> scales = rows->scales.ToVector<float>();
  const std::vector<int8_t> values = rows->values.ToVector<int8_t>();
  for (int64_t row = 0; row < 33; ++row) {
    int largest = 0;
    for (int64_t k = 0; k < 50; ++k) {
      const int64_t i = row * 50 + k;
      EXPECT_LE(std::abs(original[i] - restored[i]), scales[row] * 0.5f * 1.0001f) << row << "," << k;
      EXPECT_EQ(restored[i], scales[row] * values[i]);
      largest = std::max(largest, std::abs(static_cast<int>(values[i])));
    }
    EXPECT_EQ(largest, 127) << "row " << row << ": its largest weight maps to 127";
  }
}

TEST(Int8WeightRowsTest, MalformedRowsAreErrors) {
  absl::StatusOr<Int8Rows> rows = QuantizeWeightRows(Random({4, 8}, 3));
  ASSERT_TRUE(rows.ok()) << rows.status();
  Int8Rows short_scales{rows->values, *Tensor::Zeros({3}, DType::kF32)};
  absl::Status status = PackInt8Rows(short_scales).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "scales must be f32 [4]")) << status;
  Int8Rows f32_values{Random({4, 8}, 4), rows->scales};
  status = DequantizeInt8Rows(f32_values).status();
  EXPECT_TRUE(absl::StrContains(status.message(), "i8 [out, in]")) << status;
  status = QuantizeWeightRows(*Tensor::Zeros({4}, DType::kF32)).status();
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
}

}  // namespace
}  // namespace tfm
