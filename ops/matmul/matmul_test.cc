#include "ops/matmul/matmul.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
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
  return *RandomUniform(shape, PhiloxState{7, stream, 0}, -1.0f, 1.0f);
}

// Storage shape of an operand [batch..., rows, cols], transposed if asked.
Shape Stored(Shape batch, int64_t rows, int64_t cols, bool transpose) {
  batch.push_back(transpose ? cols : rows);
  batch.push_back(transpose ? rows : cols);
  return batch;
}

struct Case {
  Shape batch;
  int64_t m, n, k;
  bool ta, tb;
};

TEST(MatMulTest, SmallProduct) {
  const Tensor a = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = *Tensor::FromVector<float>({1, 0, 0, 1, 1, 1}, {3, 2});
  absl::StatusOr<Tensor> out = MatMul(a, b);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{2, 2}));
  EXPECT_EQ(out->ToVector<float>(), (std::vector<float>{4, 5, 10, 11}));
}

TEST(MatMulTest, GradientsForEveryTranspose) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = Random(Stored({2}, 3, 4, ta), 1);
      const Tensor b = Random(Stored({2}, 4, 5, tb), 2);
      auto forward = [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<Tensor> out = MatMul(in[0], in[1], ta, tb);
        if (!out.ok()) return out.status();
        return std::vector<Tensor>{*out};
      };
      auto backward = [&](const std::vector<Tensor>& in, const std::vector<Tensor>&,
                          const std::vector<Tensor>& dout)
          -> absl::StatusOr<std::vector<Tensor>> {
        absl::StatusOr<MatMulGrads> grads = MatMulBackward(dout[0], in[0], in[1], ta, tb);
        if (!grads.ok()) return grads.status();
        return std::vector<Tensor>{grads->da, grads->db};
      };
      EXPECT_TRUE(CheckGradients(forward, backward, {a, b})) << ta << tb;
    }
  }
}

// One peer call covers every transpose pair at a small shape and a long inner
// extent (k = 520) where sums of many terms need SumTolerance.
TEST(MatMulTest, MatchesTorch) {
  const std::vector<Case> cases = {
      {{2, 3}, 5, 4, 7, false, false}, {{2, 3}, 5, 4, 7, false, true},
      {{2, 3}, 5, 4, 7, true, false},  {{2, 3}, 5, 4, 7, true, true},
      {{2}, 33, 17, 520, false, true}, {{2}, 33, 17, 520, true, false},
  };
  NamedTensors inputs;
  std::vector<std::string> outputs;
  std::string flags = "flags = [";
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    inputs[absl::StrCat("a", i)] = Random(Stored(c.batch, c.m, c.k, c.ta), 3 * i);
    inputs[absl::StrCat("b", i)] = Random(Stored(c.batch, c.k, c.n, c.tb), 3 * i + 1);
    Shape out_shape = c.batch;
    out_shape.push_back(c.m);
    out_shape.push_back(c.n);
    inputs[absl::StrCat("dy", i)] = Random(out_shape, 3 * i + 2);
    for (const char* name : {"y", "da", "db"}) outputs.push_back(absl::StrCat(name, i));
    absl::StrAppend(&flags, "(", c.ta ? "True" : "False", ", ", c.tb ? "True" : "False", "), ");
  }
  absl::StatusOr<NamedTensors> ref = TorchReference(flags + R"py(]
for i, (ta, tb) in enumerate(flags):
    a, b, dy = globals()[f'a{i}'], globals()[f'b{i}'], globals()[f'dy{i}']
    y = torch.matmul(a.transpose(-1, -2) if ta else a, b.transpose(-1, -2) if tb else b)
    globals()[f'y{i}'] = y
    globals()[f'da{i}'], globals()[f'db{i}'] = grads(y, dy, [a, b])
)py", inputs, outputs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor& a = inputs[absl::StrCat("a", i)];
    const Tensor& b = inputs[absl::StrCat("b", i)];
    absl::StatusOr<Tensor> y = MatMul(a, b, c.ta, c.tb);
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<MatMulGrads> grads =
        MatMulBackward(inputs[absl::StrCat("dy", i)], a, b, c.ta, c.tb);
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_TRUE(AllClose(*y, ref->at(absl::StrCat("y", i)), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->da, ref->at(absl::StrCat("da", i)), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->db, ref->at(absl::StrCat("db", i)), SumTolerance())) << i;
  }
}

// Entries above OpenBLAS's single-thread threshold (m*n*k = 262144) in an even
// batch run on our pool with BLAS single-threaded, both backward products of
// an entry together; alone, an entry is one BLAS-threaded product. Every
// transpose pair must agree between the two paths.
TEST(MatMulTest, PoolBatchesMatchEntriesAlone) {
  const int64_t batch = 4, m = 72, n = 65, k = 70;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = Random(Stored({batch}, m, k, ta), 1);
      const Tensor b = Random(Stored({batch}, k, n, tb), 2);
      const Tensor dy = Random({batch, m, n}, 3);
      absl::StatusOr<Tensor> y = MatMul(a, b, ta, tb);
      ASSERT_TRUE(y.ok()) << y.status();
      absl::StatusOr<MatMulGrads> grads = MatMulBackward(dy, a, b, ta, tb);
      ASSERT_TRUE(grads.ok()) << grads.status();
      for (int64_t i = 0; i < batch; ++i) {
        const Tensor a_i = *a.Slice(i, i + 1), b_i = *b.Slice(i, i + 1);
        absl::StatusOr<Tensor> y_i = MatMul(a_i, b_i, ta, tb);
        ASSERT_TRUE(y_i.ok()) << y_i.status();
        absl::StatusOr<MatMulGrads> grads_i = MatMulBackward(*dy.Slice(i, i + 1), a_i, b_i, ta, tb);
        ASSERT_TRUE(grads_i.ok()) << grads_i.status();
        const std::string where = absl::StrCat("ta ", ta, " tb ", tb, " entry ", i);
        EXPECT_TRUE(AllClose(*y->Slice(i, i + 1), *y_i, SumTolerance())) << where;
        EXPECT_TRUE(AllClose(*grads->da.Slice(i, i + 1), grads_i->da, SumTolerance())) << where;
        EXPECT_TRUE(AllClose(*grads->db.Slice(i, i + 1), grads_i->db, SumTolerance())) << where;
      }
    }
  }
}

TEST(MatMulTest, EmptyInnerExtentGivesZeros) {
  absl::StatusOr<Tensor> out = MatMul(*Tensor::Zeros({2, 0}, DType::kF32),
                                      *Tensor::Zeros({0, 3}, DType::kF32));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->ToVector<float>(), std::vector<float>(6, 0.0f));
}

// A CUDA result against the f32 CPU kernel on the same inputs (rounded to
// bf16 for bf16): f32 sums are only reordered; bf16 also rounds the result
// once (2^-9 relative).
Tolerance CudaTolerance(DType dtype) { return SumTolerance(dtype == DType::kF32 ? 1e-5 : 1e-2); }

// matmul and matmul_backward on GPU 0 against the CPU, `a` and `b` given as
// host f32 tensors already rounded to `dtype`.
void ExpectCudaMatchesCpu(const Tensor& a, const Tensor& b, bool ta, bool tb, DType dtype) {
  absl::StatusOr<Tensor> y = MatMul(a, b, ta, tb);
  ASSERT_TRUE(y.ok()) << y.status();
  const Tensor dy = RoundedThrough(Random(y->shape(), 9), dtype);
  absl::StatusOr<MatMulGrads> grads = MatMulBackward(dy, a, b, ta, tb);
  ASSERT_TRUE(grads.ok()) << grads.status();
  const Tensor a_gpu = OnCuda(HostAs(a, dtype)), b_gpu = OnCuda(HostAs(b, dtype));
  absl::StatusOr<Tensor> y_gpu = MatMul(a_gpu, b_gpu, ta, tb);
  ASSERT_TRUE(y_gpu.ok()) << y_gpu.status();
  absl::StatusOr<MatMulGrads> grads_gpu =
      MatMulBackward(OnCuda(HostAs(dy, dtype)), a_gpu, b_gpu, ta, tb);
  ASSERT_TRUE(grads_gpu.ok()) << grads_gpu.status();
  EXPECT_EQ(y_gpu->dtype(), dtype);
  EXPECT_EQ(grads_gpu->da.dtype(), dtype);
  EXPECT_TRUE(AllClose(HostF32(*y_gpu), *y, CudaTolerance(dtype)));
  EXPECT_TRUE(AllClose(HostF32(grads_gpu->da), grads->da, CudaTolerance(dtype)));
  EXPECT_TRUE(AllClose(HostF32(grads_gpu->db), grads->db, CudaTolerance(dtype)));
}

// Every transpose pair, odd extents, one strided-batched GEMM per product
// over several batch axes, a single row, attention's heads, and empty
// extents (k = 0 must give zeros).
TEST(MatMulTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const std::vector<Case> cases = {
      {{}, 37, 61, 129, false, false},  {{3, 2}, 17, 33, 65, false, false},
      {{}, 1, 2048, 512, false, false}, {{16}, 128, 128, 64, false, false},
      {{2}, 5, 7, 0, false, false},     {{0}, 3, 4, 5, false, false},
      {{2}, 0, 4, 5, false, false},
  };
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const Case& c : cases) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " batch ", ShapeToString(c.batch), " m ", c.m,
                                    " n ", c.n, " k ", c.k, " ta ", ta, " tb ", tb));
          ExpectCudaMatchesCpu(RoundedThrough(Random(Stored(c.batch, c.m, c.k, ta), 1), dtype),
                               RoundedThrough(Random(Stored(c.batch, c.k, c.n, tb), 2), dtype), ta,
                               tb, dtype);
        }
      }
    }
  }
}

// Operands that start at an odd element (views into a larger buffer), so
// that cuBLASLt must pick algorithms for 4-byte (f32) and 2-byte (bf16)
// alignment instead of its default 256.
TEST(MatMulTest, CudaMatchesCpuOnUnalignedOperands) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t m = 13, n = 9, k = 11;
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const Tensor a = RoundedThrough(Random({3, m, k}, 1), dtype);
    const Tensor b = RoundedThrough(Random({3, k, n}, 2), dtype);
    const Tensor a_gpu = *OnCuda(HostAs(a, dtype)).Slice(1, 3);
    const Tensor b_gpu = *OnCuda(HostAs(b, dtype)).Slice(1, 3);
    absl::StatusOr<Tensor> y_gpu = MatMul(a_gpu, b_gpu);
    ASSERT_TRUE(y_gpu.ok()) << y_gpu.status();
    EXPECT_TRUE(
        AllClose(HostF32(*y_gpu), *MatMul(*a.Slice(1, 3), *b.Slice(1, 3)), CudaTolerance(dtype)));
  }
}

TEST(MatMulTest, Bf16IsForCudaOnly) {
  const Tensor a = HostAs(Random({2, 3}, 1), DType::kBF16);
  const absl::Status status = MatMul(a, HostAs(Random({3, 4}, 2), DType::kBF16)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no kernel for CPU/bf16"), std::string::npos) << status;
}

// No rows (m = 0) in a batch: every output is empty, and nothing fails.
TEST(MatMulTest, EmptyRowsInABatch) {
  const Tensor a = Random({2, 0, 5}, 1), b = Random({2, 5, 4}, 2);
  absl::StatusOr<Tensor> out = MatMul(a, b);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{2, 0, 4}));
  absl::StatusOr<MatMulGrads> grads = MatMulBackward(Random({2, 0, 4}, 3), a, b);
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(grads->db.ToVector<float>(), std::vector<float>(40, 0.0f));
}

TEST(MatMulTest, BadArgumentsNameTheOpAndShapes) {
  const Tensor a = Random({2, 3}, 1);
  absl::Status inner = MatMul(a, Random({4, 5}, 2)).status();
  EXPECT_EQ(inner.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(inner.message().find("matmul: inner extents differ"), std::string::npos) << inner;
  EXPECT_NE(inner.message().find("f32[4, 5]"), std::string::npos) << inner;
  EXPECT_EQ(MatMul(Random({2, 2, 3}, 1), Random({3, 3, 5}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);  // Batch axes differ.
  EXPECT_EQ(MatMul(Random({3}, 1), Random({3}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);  // Rank 1.
  EXPECT_EQ(MatMul(a, *Tensor::Zeros({3, 2}, DType::kI32)).status().code(),
            absl::StatusCode::kInvalidArgument);  // Mixed dtypes.
  EXPECT_EQ(MatMulBackward(Random({2, 4}, 3), a, Random({3, 5}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);  // dout's shape.
}

}  // namespace
}  // namespace tfm
