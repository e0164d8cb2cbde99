#include "ops/fill/fill.h"

#include <cstdint>

#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

TEST(FillTest, EveryDtypeOnCpu) {
  EXPECT_EQ(Fill({2, 3}, 1.5, DType::kF32)->ToVector<float>(), std::vector<float>(6, 1.5f));
  const Tensor half = *Fill({4}, -2.0, DType::kF16);
  for (Half h : half.span<Half>()) EXPECT_EQ(h.bits, 0xc000);
  const Tensor bf16 = *Fill({4}, 1.0, DType::kBF16);
  for (BFloat16 b : bf16.span<BFloat16>()) EXPECT_EQ(b.bits, 0x3f80);
  EXPECT_EQ(Fill({3}, -7, DType::kI32)->ToVector<int32_t>(), std::vector<int32_t>(3, -7));
  // A value past float's 24-bit mantissa survives in i64.
  EXPECT_EQ(Fill({2}, 123456789012.0, DType::kI64)->ToVector<int64_t>(),
            std::vector<int64_t>(2, 123456789012));
}

TEST(FillTest, LargeFillIsThreadedAndComplete) {
  Tensor t = *Fill({1 << 20}, 3.0, DType::kF32);
  for (float v : t.span<float>()) ASSERT_EQ(v, 3.0f);
}

TEST(FillTest, BadArgumentsNameTheOp) {
  absl::Status fraction = Fill({2}, 0.5, DType::kI32).status();
  EXPECT_EQ(fraction.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fraction.message().find("fill: value 0.5 is not representable as i32"),
            std::string::npos);
  EXPECT_FALSE(Fill({2, -3}, 1, DType::kF32).ok());
  EXPECT_FALSE(Fill({2}, 3e10, DType::kI32).ok());
}

TEST(FillTest, CudaMatchesCpuForEveryDtype) {
  TFM_SKIP_WITHOUT_GPU();
  for (DType dtype : AllDTypes()) {
    Tensor cpu = *Fill({1000, 3}, -3.0, dtype);
    absl::StatusOr<Tensor> gpu = Fill({1000, 3}, -3.0, dtype, Device::Cuda(0));
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ(gpu->device(), Device::Cuda(0));
    Tensor back = *CopyToDevice(*gpu, Device::Cpu());
    ASSERT_EQ(std::memcmp(back.raw_data(), cpu.raw_data(), cpu.nbytes()), 0)
        << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace tfm
