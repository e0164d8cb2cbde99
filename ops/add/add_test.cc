#include "ops/add/add.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ops/add/sum_rows_cpu.h"
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

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{13, stream, 0}, -1.0f, 1.0f);
}

absl::StatusOr<std::vector<Tensor>> Forward(const std::vector<Tensor>& in) {
  absl::StatusOr<Tensor> out = Add(in[0], in[1]);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*out};
}

absl::StatusOr<std::vector<Tensor>> Backward(const std::vector<Tensor>& in,
                                             const std::vector<Tensor>&,
                                             const std::vector<Tensor>& dout) {
  absl::StatusOr<AddGrads> grads = AddBackward(dout[0], in[1]);
  if (!grads.ok()) return grads.status();
  return std::vector<Tensor>{grads->da, grads->db};
}

TEST(AddTest, SameShapeAndBroadcast) {
  const Tensor a = *Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(Add(a, a)->ToVector<float>(), (std::vector<float>{2, 4, 6, 8}));
  const Tensor b = *Tensor::FromVector<float>({10, 20}, {2});
  EXPECT_EQ(Add(a, b)->ToVector<float>(), (std::vector<float>{11, 22, 13, 24}));
  absl::StatusOr<AddGrads> grads = AddBackward(a, b);
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(grads->da.ToVector<float>(), a.ToVector<float>());
  EXPECT_EQ(grads->db.ToVector<float>(), (std::vector<float>{4, 6}));
}

// SumToShape is add_backward's db alone, bit for bit, and never dout itself.
TEST(AddTest, SumToShapeEqualsAddBackwardDb) {
  for (const Shape& b_shape : {Shape{7}, Shape{5, 7}, Shape{3, 5, 7}}) {
    const Tensor dout = Random({3, 5, 7}, 3);
    const Tensor b = Random(b_shape, 4);
    absl::StatusOr<AddGrads> grads = AddBackward(dout, b);
    absl::StatusOr<Tensor> db = SumToShape(dout, b);
    ASSERT_TRUE(grads.ok() && db.ok()) << grads.status() << db.status();
    EXPECT_EQ(db->shape(), b_shape);
    EXPECT_EQ(db->ToVector<float>(), grads->db.ToVector<float>());
    EXPECT_FALSE(db->SharesBufferWith(dout));
  }
  EXPECT_EQ(SumToShape(Random({2, 3}, 1), Random({4}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Gradient accumulation adds into what backward returned: that must change
// neither the upstream gradient nor the other gradient.
TEST(AddTest, BackwardOutputsAreNotAliasesOfDout) {
  const Tensor dout = *Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2});
  absl::StatusOr<AddGrads> grads = AddBackward(dout, dout);  // Same shape: da = db = dout.
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_FALSE(grads->da.SharesBufferWith(dout));
  EXPECT_FALSE(grads->db.SharesBufferWith(dout));
  EXPECT_FALSE(grads->da.SharesBufferWith(grads->db));
  for (float& value : grads->da.span<float>()) value += 100.0f;
  EXPECT_EQ(dout.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(grads->db.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

// The bias reduction: row chunks, 4-row steps and their remainders, column
// blocks and their remainders, against a double reference.
TEST(AddTest, SumRowsCoversEveryShape) {
  for (const int64_t rows : {0, 1, 3, 64, 131, 1031}) {
    for (const int64_t cols : {1, 5, 512, 2049}) {
      const Tensor in = *RandomUniform({rows, cols}, PhiloxState{3, 9, 0}, -1.0f, 1.0f);
      std::vector<float> out(cols, -7.0f);
      SumRowsCpu(in.data<float>(), rows, cols, out.data());
      for (int64_t c = 0; c < cols; ++c) {
        double expected = 0;
        for (int64_t r = 0; r < rows; ++r) expected += in.data<float>()[r * cols + c];
        ASSERT_NEAR(out[c], expected, 1e-5 * (1 + std::sqrt(static_cast<double>(rows))))
            << rows << "x" << cols << " at " << c;
      }
    }
  }
}

// The summation order is a function of the shape alone (so the result is
// the same for any thread count): row chunks fixed by the row count, four
// rows per step as acc + ((r0 + r1) + (r2 + r3)), leftover rows one by one,
// then the chunks' sums in chunk order. A serial replay of that order must
// match bit for bit, vector bodies and scalar tails (odd column counts)
// alike.
TEST(AddTest, SumRowsOrderDependsOnShapeOnly) {
  for (const int64_t rows : {1, 7, 131, 1031, 4099}) {
    for (const int64_t cols : {3, 13, 512, 2049}) {
      const Tensor in = *RandomUniform({rows, cols}, PhiloxState{5, 2, 0}, -1.0f, 1.0f);
      const float* x = in.data<float>();
      std::vector<float> out(cols, -7.0f);
      SumRowsCpu(x, rows, cols, out.data());
      const int64_t chunks = std::clamp<int64_t>(rows / 64, 1, 16);
      std::vector<float> expected(cols, 0.0f);
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        const int64_t begin = rows * chunk / chunks, end = rows * (chunk + 1) / chunks;
        for (int64_t c = 0; c < cols; ++c) {
          float acc = 0.0f;
          int64_t r = begin;
          for (; r + 4 <= end; r += 4) {
            const float* p = x + r * cols + c;
            acc += (p[0] + p[cols]) + (p[2 * cols] + p[3 * cols]);
          }
          for (; r < end; ++r) acc += x[r * cols + c];
          expected[c] = chunk == 0 ? acc : expected[c] + acc;
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(out[c], expected[c]) << rows << "x" << cols << " at " << c;
      }
    }
  }
}

TEST(AddTest, Gradients) {
  EXPECT_TRUE(CheckGradients(Forward, Backward, {Random({2, 3, 4}, 1), Random({2, 3, 4}, 2)}));
  EXPECT_TRUE(CheckGradients(Forward, Backward, {Random({2, 3, 4}, 1), Random({3, 4}, 2)}));
  EXPECT_TRUE(CheckGradients(Forward, Backward, {Random({2, 3, 4}, 1), Random({}, 2)}));
}

// The large case crosses thread chunks and period boundaries (a period of
// 96 does not divide the chunk length); db sums 700 rows (SumTolerance).
TEST(AddTest, MatchesTorch) {
  NamedTensors inputs = {
      {"a1", Random({2, 3, 5}, 1)}, {"b1", Random({2, 3, 5}, 2)}, {"dy1", Random({2, 3, 5}, 3)},
      {"a2", Random({700, 96}, 4)}, {"b2", Random({96}, 5)},      {"dy2", Random({700, 96}, 6)},
  };
  absl::StatusOr<NamedTensors> ref =
      TorchReference(R"py(
      y1 = a1 + b1
      da1, db1 = grads(y1, dy1, [a1, b1])
      y2 = a2 + b2
      da2, db2 = grads(y2, dy2, [a2, b2])
  )py",
                     inputs, {"y1", "da1", "db1", "y2", "da2", "db2"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const std::string i : {"1", "2"}) {
    absl::StatusOr<Tensor> y = Add(inputs.at("a" + i), inputs.at("b" + i));
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<AddGrads> grads = AddBackward(inputs.at("dy" + i), inputs.at("b" + i));
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_TRUE(AllClose(*y, ref->at("y" + i))) << i;
    EXPECT_TRUE(AllClose(grads->da, ref->at("da" + i))) << i;
    EXPECT_TRUE(AllClose(grads->db, ref->at("db" + i), SumTolerance())) << i;
  }
}

// The CUDA kernels against the CPU's: f32 to rounding (the same adds; the
// column sums in another order), f16 and bf16 against the f32 CPU kernel on
// the rounded inputs. Shapes: packed and element-wise paths, periods that are
// not whole packs, row counts over many chunks, odd column counts, a scalar
// b, no broadcasting, and empty tensors.
TEST(AddTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5, 7}, {7}},       {{2, 3, 4}, {2, 3, 4}}, {{5, 8}, {}},        {{4099, 96}, {96}},
      {{1031, 513}, {513}},   {{33, 7}, {7}},         {{9, 4097}, {4097}}, {{0, 8}, {8}},
      {{3, 1001}, {3, 1001}}, {{20000, 3}, {3}}};
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool f32 = dtype == DType::kF32;
    const Tolerance elementwise =
        f32 ? Tolerance{.atol = 0.0, .rtol = 0.0} : Tolerance{.atol = 1e-2, .rtol = 1e-2};
    const Tolerance sums = SumTolerance(f32 ? 1e-5 : 1e-2);
    for (const auto& [a_shape, b_shape] : shapes) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " a " << ShapeToString(a_shape)
                                        << " b " << ShapeToString(b_shape));
      const Tensor a = RoundedThrough(Random(a_shape, 1), dtype);
      const Tensor b = RoundedThrough(Random(b_shape, 2), dtype);
      const Tensor dout = RoundedThrough(Random(a_shape, 3), dtype);
      const Tensor a_gpu = OnCuda(HostAs(a, dtype));
      const Tensor b_gpu = OnCuda(HostAs(b, dtype));
      const Tensor dout_gpu = OnCuda(HostAs(dout, dtype));
      absl::StatusOr<Tensor> y = Add(a_gpu, b_gpu);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y->device(), Device::Cuda(0));
      EXPECT_TRUE(AllClose(HostF32(*y), *Add(a, b), elementwise));
      absl::StatusOr<AddGrads> grads = AddBackward(dout_gpu, b_gpu);
      ASSERT_TRUE(grads.ok()) << grads.status();
      EXPECT_TRUE(AllClose(HostF32(grads->da), dout, Tolerance{.atol = 0.0, .rtol = 0.0}));
      const Tensor db_cpu = *SumToShape(dout, b);
      EXPECT_TRUE(AllClose(HostF32(grads->db), db_cpu, sums));
      absl::StatusOr<Tensor> db = SumToShape(dout_gpu, b_gpu);
      ASSERT_TRUE(db.ok()) << db.status();
      EXPECT_TRUE(AllClose(HostF32(*db), db_cpu, sums));
      EXPECT_FALSE(db->SharesBufferWith(dout_gpu));
      // No atomics: the same sums, bit for bit, on every run.
      EXPECT_EQ(HostF32(*SumToShape(dout_gpu, b_gpu)).ToVector<float>(),
                HostF32(*db).ToVector<float>());
    }
  }
}

// The element-wise path: views one element into their buffers are not
// 16-byte aligned, and must add and sum like the packed path.
TEST(AddTest, CudaUnalignedOperands) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor a = Random({4001}, 1);
  const Tensor b = Random({1001}, 2);
  const Tensor a_cpu = *a.Slice(1, 4001)->Reshape({4, 1000});
  const Tensor b_cpu = *b.Slice(1, 1001);
  const Tensor a_gpu = *OnCuda(a).Slice(1, 4001)->Reshape({4, 1000});
  const Tensor b_gpu = *OnCuda(b).Slice(1, 1001);
  absl::StatusOr<Tensor> y = Add(a_gpu, b_gpu);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(AllClose(HostF32(*y), *Add(a_cpu, b_cpu), Tolerance{.atol = 0.0, .rtol = 0.0}));
  absl::StatusOr<Tensor> db = SumToShape(a_gpu, b_gpu);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_TRUE(AllClose(HostF32(*db), *SumToShape(a_cpu, b_cpu), SumTolerance()));
}

TEST(AddTest, BadArgumentsNameTheOpAndShapes) {
  absl::Status status = Add(Random({2, 3}, 1), Random({2}, 2)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("add: b's shape"), std::string::npos) << status;
  EXPECT_NE(status.message().find("f32[2, 3]"), std::string::npos) << status;
  EXPECT_EQ(Add(Random({3}, 1), Random({2, 3}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  status = Add(Random({3}, 1), *Tensor::Zeros({3}, DType::kI32)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("add: input 'b' is i32 but the kernel runs in f32"),
            std::string::npos)
      << status;
  EXPECT_EQ(AddBackward(Random({2, 3}, 1), Random({4}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
