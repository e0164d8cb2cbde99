#include "core/tensor.h"

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(TensorTest, EmptyHasShapeDtypeAndAlignedStorage) {
  absl::StatusOr<Tensor> t = Tensor::Empty({2, 3, 4}, DType::kF32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->defined());
  EXPECT_EQ(t->rank(), 3);
  EXPECT_EQ(t->dim(-1), 4);
  EXPECT_EQ(t->num_elements(), 24);
  EXPECT_EQ(t->nbytes(), 96u);
  EXPECT_EQ(t->device(), Device::Cpu());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kCpuAlignment, 0u);
  EXPECT_EQ(t->DebugString(), "f32[2, 3, 4] on cpu");
}

TEST(TensorTest, ZerosAndFromVector) {
  absl::StatusOr<Tensor> zeros = Tensor::Zeros({5}, DType::kI64);
  ASSERT_TRUE(zeros.ok());
  for (int64_t v : zeros->span<int64_t>()) EXPECT_EQ(v, 0);
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  absl::StatusOr<Tensor> t = Tensor::FromVector<float>(values, {2, 3});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ToVector<float>(), values);
  EXPECT_FALSE(Tensor::FromVector<float>(values, {4, 2}).ok());
}

TEST(TensorTest, SliceIsAViewSharingTheBuffer) {
  std::vector<int32_t> values(12);
  for (int i = 0; i < 12; ++i) values[i] = i;
  Tensor t = *Tensor::FromVector<int32_t>(values, {4, 3});
  absl::StatusOr<Tensor> rows = t.Slice(1, 3);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->shape(), Shape({2, 3}));
  EXPECT_EQ(rows->ToVector<int32_t>(), std::vector<int32_t>({3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(rows->SharesBufferWith(t));
  rows->data<int32_t>()[0] = 100;  // Writes through the view...
  EXPECT_EQ(t.data<int32_t>()[3], 100);  // ...are seen by the original.
  // A slice of a slice keeps offsets right.
  Tensor inner = *rows->Slice(1, 2);
  EXPECT_EQ(inner.ToVector<int32_t>(), std::vector<int32_t>({6, 7, 8}));
  EXPECT_EQ(t.Slice(2, 2)->num_elements(), 0);
}

TEST(TensorTest, SliceOutOfRangeIsAnError) {
  Tensor t = *Tensor::Empty({4, 3}, DType::kF32);
  EXPECT_EQ(t.Slice(3, 5).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(t.Slice(2, 1).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_FALSE(t.Slice(-1, 2).ok());
  Tensor scalar = *Tensor::Empty({}, DType::kF32);
  EXPECT_FALSE(scalar.Slice(0, 1).ok());
}

TEST(TensorTest, ReshapeKeepsElements) {
  Tensor t = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = *t.Reshape({3, 2});
  EXPECT_TRUE(r.SharesBufferWith(t));
  EXPECT_EQ(r.dim(0), 3);
  EXPECT_EQ(r.ToVector<float>(), t.ToVector<float>());
  absl::StatusOr<Tensor> bad = t.Reshape({4, 2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("[2, 3]"), std::string::npos);
}

TEST(TensorTest, NegativeShapeIsRejected) {
  EXPECT_EQ(Tensor::Empty({2, -1}, DType::kF32).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, BufferIsFreedWithTheLastView) {
  const int64_t before = CpuAllocator()->stats().bytes_in_use;
  {
    Tensor t = *Tensor::Empty({1000}, DType::kF32);
    Tensor view = *t.Slice(0, 10);
    t = Tensor();
    EXPECT_GE(CpuAllocator()->stats().bytes_in_use, before + 4000);
  }
  EXPECT_EQ(CpuAllocator()->stats().bytes_in_use, before);
}

TEST(TensorTest, CopyToCpuIsADeepCopy) {
  Tensor t = *Tensor::FromVector<float>({1, 2, 3}, {3});
  Tensor copy = *CopyToDevice(t, Device::Cpu());
  EXPECT_FALSE(copy.SharesBufferWith(t));
  EXPECT_EQ(copy.ToVector<float>(), t.ToVector<float>());
}

// A const handle (an op's input) must not hand out writable elements.
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().data<float>()),
                             const float*>);
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().span<float>()),
                             absl::Span<const float>>);
static_assert(std::is_same_v<decltype(std::declval<const Tensor&>().raw_data()), const void*>);
static_assert(std::is_same_v<decltype(std::declval<Tensor&>().data<float>()), float*>);

TEST(TensorTest, ConstAndMutableAccessSeeTheSameElements) {
  Tensor t = *Tensor::FromVector<float>({1, 2, 3}, {3});
  const Tensor& read_only = t;
  t.data<float>()[1] = 7;
  EXPECT_EQ(read_only.data<float>(), t.data<float>());
  EXPECT_EQ(read_only.ToVector<float>(), (std::vector<float>{1, 7, 3}));
}

constexpr int64_t kTwoTo30 = int64_t{1} << 30;
constexpr int64_t kTwoTo32 = int64_t{1} << 32;

TEST(ShapeTest, ByteSizesBeyondInt64AreRejected) {
  // 2^64 elements: the count itself does not fit.
  absl::Status count = ValidateShape({kTwoTo32, kTwoTo32});
  EXPECT_EQ(count.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(count.message().find("[4294967296, 4294967296] is too large"), std::string::npos)
      << count;
  // 2^62 elements fit, their 2^64 bytes as f32 do not.
  EXPECT_TRUE(ValidateShape({kTwoTo30, kTwoTo30, 4}).ok());
  EXPECT_EQ(ValidateShape({kTwoTo30, kTwoTo30, 4}, 4).code(), absl::StatusCode::kInvalidArgument);
  // The limit is 2^63 - 1 bytes: 2^62 pass, 2^63 do not.
  EXPECT_TRUE(ValidateShape({kTwoTo30, kTwoTo30, 2}, 2).ok());
  EXPECT_EQ(ValidateShape({kTwoTo30, kTwoTo30, 2}, 4).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, EmptyShapesWithHugeExtentsCountZeroElements) {
  const Shape empty = {kTwoTo30, 0, kTwoTo30};
  ASSERT_TRUE(ValidateShape(empty, 4).ok());
  EXPECT_EQ(NumElements(empty), 0);
  EXPECT_EQ(NumRows(empty), 0);
  const Shape empty_rows = {kTwoTo30, kTwoTo30, 0};
  ASSERT_TRUE(ValidateShape(empty_rows, 4).ok());
  EXPECT_EQ(NumElements(empty_rows), 0);
  EXPECT_EQ(NumRows(empty_rows), int64_t{1} << 60);
  // Its non-zero extents alone overflow: rejected, or NumRows would.
  EXPECT_FALSE(ValidateShape({kTwoTo32, kTwoTo32, 0}).ok());
}

TEST(TensorTest, OverflowingShapesAreErrorsNotAllocations) {
  const Shape huge = {kTwoTo30, kTwoTo30, 4};  // 2^62 elements.
  EXPECT_EQ(Tensor::Empty(huge, DType::kF32).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Zeros(huge, DType::kI64).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::FromVector<float>(std::vector<float>{1}, {kTwoTo32, kTwoTo32}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor empty = *Tensor::Empty({0}, DType::kF32);
  EXPECT_EQ(empty.Reshape({kTwoTo32, kTwoTo32, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShapeTest, NumRowsIsTheProductOfAllButTheLastExtent) {
  EXPECT_EQ(NumRows({}), 1);
  EXPECT_EQ(NumRows({7}), 1);
  EXPECT_EQ(NumRows({2, 3, 5}), 6);
  EXPECT_EQ(NumRows({4, 0}), 4);  // Rows survive an empty last extent.
  EXPECT_EQ(NumRows({0, 5}), 0);
}

TEST(DeviceTest, ParseAndPrint) {
  EXPECT_EQ(*Device::Parse("cpu"), Device::Cpu());
  EXPECT_EQ(*Device::Parse("CUDA"), Device::Cuda(0));
  EXPECT_EQ(*Device::Parse("cuda:3"), Device::Cuda(3));
  EXPECT_EQ(Device::Cuda(2).ToString(), "cuda:2");
  EXPECT_FALSE(Device::Parse("tpu").ok());
  EXPECT_FALSE(Device::Parse("cuda:-1").ok());
  EXPECT_FALSE(Device::Parse("cuda:x").ok());
}

}  // namespace
}  // namespace tfm
