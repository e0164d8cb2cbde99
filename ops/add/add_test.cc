#include "ops/add/add.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "ops/add/sum_rows_cpu.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::CheckGradients;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::SumTolerance;
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
      {"a1", Random({2, 3, 5}, 1)},    {"b1", Random({2, 3, 5}, 2)},
      {"dy1", Random({2, 3, 5}, 3)},   {"a2", Random({700, 96}, 4)},
      {"b2", Random({96}, 5)},         {"dy2", Random({700, 96}, 6)},
  };
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y1 = a1 + b1
      da1, db1 = grads(y1, dy1, [a1, b1])
      y2 = a2 + b2
      da2, db2 = grads(y2, dy2, [a2, b2])
  )py", inputs, {"y1", "da1", "db1", "y2", "da2", "db2"});
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

TEST(AddTest, BadArgumentsNameTheOpAndShapes) {
  absl::Status status = Add(Random({2, 3}, 1), Random({2}, 2)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("add: b's shape"), std::string::npos) << status;
  EXPECT_NE(status.message().find("f32[2, 3]"), std::string::npos) << status;
  EXPECT_EQ(Add(Random({3}, 1), Random({2, 3}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Add(Random({3}, 1), *Tensor::Zeros({3}, DType::kI32)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AddBackward(Random({2, 3}, 1), Random({4}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
