#include "ops/concat_rows/concat_rows.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

Tensor Iota(const Shape& shape, float first) {
  Tensor t = *Tensor::Empty(shape, DType::kF32);
  float value = first;
  for (float& x : t.span<float>()) x = value++;
  return t;
}

TEST(ConcatRowsTest, StacksAlongTheFirstAxis) {
  const Tensor a = Iota({2, 3}, 0), b = Iota({1, 3}, 100), c = Iota({3, 3}, 200);
  absl::StatusOr<Tensor> out = ConcatRows({a, b, c});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), Shape({6, 3}));
  std::vector<float> expected = a.ToVector<float>();
  for (const Tensor* x : {&b, &c}) {
    for (float v : x->span<float>()) expected.push_back(v);
  }
  EXPECT_EQ(out->ToVector<float>(), expected);
  // A new tensor, not a view of an input (the op registry's aliasing rule).
  EXPECT_FALSE(out->SharesBufferWith(a));
}

TEST(ConcatRowsTest, SlicesOfOneBufferAndEmptyPieces) {
  const Tensor whole = Iota({4, 2}, 0);
  const Tensor empty = *Tensor::Empty({0, 2}, DType::kF32);
  absl::StatusOr<Tensor> out = ConcatRows({*whole.Slice(2, 4), empty, *whole.Slice(0, 2)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ToVector<float>(), std::vector<float>({4, 5, 6, 7, 0, 1, 2, 3}));
}

TEST(ConcatRowsTest, MismatchesAreErrorsNamingTheTensor) {
  const Tensor a = Iota({2, 3}, 0), b = Iota({2, 4}, 0);
  absl::Status status = ConcatRows({a, b}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("tensor 1"), std::string::npos) << status;
  EXPECT_FALSE(ConcatRows({}).ok());
  EXPECT_FALSE(ConcatRows({*Tensor::Empty({}, DType::kF32)}).ok());
  EXPECT_FALSE(ConcatRows({a, *Tensor::Empty({1, 3}, DType::kI32)}).ok());
}

TEST(ConcatRowsTest, CudaMatchesCpuForEveryDtype) {
  TFM_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32, DType::kI64, DType::kI8}) {
    std::vector<Tensor> host, device;
    for (int64_t rows : {3, 1, 5}) {
      Tensor x = *Tensor::Empty({rows, 7}, dtype);
      auto* bytes = static_cast<uint8_t*>(x.raw_data());
      for (size_t i = 0; i < x.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + rows);
      device.push_back(*CopyToDevice(x, Device::Cuda(0)));
      host.push_back(std::move(x));
    }
    const Tensor cpu = *ConcatRows(host);
    absl::StatusOr<Tensor> gpu = ConcatRows(device);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ(gpu->device(), Device::Cuda(0));
    const Tensor back = *CopyToDevice(*gpu, Device::Cpu());
    ASSERT_EQ(back.shape(), cpu.shape());
    EXPECT_EQ(std::memcmp(back.raw_data(), cpu.raw_data(), cpu.nbytes()), 0) << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace tfm
