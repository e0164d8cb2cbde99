#include "ops/linear/linear.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/attrs.h"
#include "core/op_registry.h"
#include "gtest/gtest.h"
#include "ops/cast/cast.h"
#include "ops/random/random.h"
#include "ops/relu/relu.h"
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
  return *RandomUniform(shape, PhiloxState{11, stream, 0}, -1.0f, 1.0f);
}

absl::StatusOr<std::vector<Tensor>> Forward(const std::vector<Tensor>& in) {
  absl::StatusOr<Tensor> out =
      in.size() == 3 ? Linear(in[0], in[1], in[2]) : Linear(in[0], in[1]);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*out};
}

absl::StatusOr<std::vector<Tensor>> Backward(const std::vector<Tensor>& in,
                                             const std::vector<Tensor>&,
                                             const std::vector<Tensor>& dout) {
  absl::StatusOr<LinearGrads> grads = LinearBackward(dout[0], in[0], in[1], in.size() == 3);
  if (!grads.ok()) return grads.status();
  std::vector<Tensor> result = {grads->dx, grads->dweight};
  if (in.size() == 3) result.push_back(grads->dbias);
  return result;
}

TEST(LinearTest, SmallExample) {
  const Tensor x = *Tensor::FromVector<float>({1, 2}, {1, 2});
  const Tensor w = *Tensor::FromVector<float>({1, 0, 1, 1, 0, -1}, {3, 2});
  const Tensor b = *Tensor::FromVector<float>({0.5f, 0, 1}, {3});
  EXPECT_EQ(Linear(x, w, b)->ToVector<float>(), (std::vector<float>{1.5f, 3, -1}));
  EXPECT_EQ(Linear(x, w)->ToVector<float>(), (std::vector<float>{1, 3, -2}));
}

TEST(LinearTest, Gradients) {
  const Tensor x = Random({2, 3, 4}, 1), w = Random({5, 4}, 2), b = Random({5}, 3);
  EXPECT_TRUE(CheckGradients(Forward, Backward, {x, w, b}));
  EXPECT_TRUE(CheckGradients(Forward, Backward, {x, w}));
}

// Sums over in = 512 and over 300 rows: SumTolerance (see torch_parity.h).
TEST(LinearTest, MatchesTorch) {
  NamedTensors inputs = {
      {"x1", Random({2, 3, 7}, 1)},     {"w1", Random({5, 7}, 2)},  {"b1", Random({5}, 3)},
      {"dy1", Random({2, 3, 5}, 4)},    {"x2", Random({300, 512}, 5)},
      {"w2", Random({96, 512}, 6)},     {"b2", Random({96}, 7)},    {"dy2", Random({300, 96}, 8)},
  };
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y1 = F.linear(x1, w1, b1)
      dx1, dw1, db1 = grads(y1, dy1, [x1, w1, b1])
      y2 = F.linear(x2, w2, b2)
      dx2, dw2, db2 = grads(y2, dy2, [x2, w2, b2])
      y2n = F.linear(x2, w2)
  )py", inputs, {"y1", "dx1", "dw1", "db1", "y2", "dx2", "dw2", "db2", "y2n"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const char* i : {"1", "2"}) {
    const auto in = [&](const std::string& name) { return inputs.at(name + i); };
    const auto expected = [&](const std::string& name) { return ref->at(name + i); };
    absl::StatusOr<Tensor> y = Linear(in("x"), in("w"), in("b"));
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<LinearGrads> grads = LinearBackward(in("dy"), in("x"), in("w"));
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_TRUE(AllClose(*y, expected("y"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dx, expected("dx"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dweight, expected("dw"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dbias, expected("db"), SumTolerance())) << i;
  }
  EXPECT_TRUE(AllClose(*Linear(inputs.at("x2"), inputs.at("w2")), ref->at("y2n"), SumTolerance()));
  absl::StatusOr<LinearGrads> no_bias =
      LinearBackward(inputs.at("dy2"), inputs.at("x2"), inputs.at("w2"), false);
  ASSERT_TRUE(no_bias.ok()) << no_bias.status();
  EXPECT_FALSE(no_bias->dbias.defined());
  EXPECT_TRUE(AllClose(no_bias->dweight, ref->at("dw2"), SumTolerance()));
}

// A CUDA result against the f32 CPU kernel on the same inputs (rounded to
// bf16 for bf16): f32 sums are only reordered; bf16 also rounds the result
// once (2^-9 relative).
Tolerance CudaTolerance(DType dtype) { return SumTolerance(dtype == DType::kF32 ? 1e-5 : 1e-2); }

// x [rows, in] and weight [out, in]: linear, linear_no_bias and
// linear_backward (with and without bias) on GPU 0 against the CPU. The
// inputs are host f32 tensors already rounded to `dtype`; `bias_gpu`, when
// given, is the bias on the GPU (a view, to try odd alignments).
void ExpectCudaMatchesCpu(const Tensor& x, const Tensor& weight, const Tensor& bias, DType dtype,
                          const Tensor* bias_gpu = nullptr) {
  const Tolerance tolerance = CudaTolerance(dtype);
  const Tensor x_gpu = OnCuda(HostAs(x, dtype)), weight_gpu = OnCuda(HostAs(weight, dtype));
  const Tensor bias_on_gpu = bias_gpu != nullptr ? *bias_gpu : OnCuda(HostAs(bias, dtype));
  for (const bool has_bias : {true, false}) {
    SCOPED_TRACE(has_bias ? "with bias" : "without bias");
    absl::StatusOr<Tensor> y = has_bias ? Linear(x, weight, bias) : Linear(x, weight);
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<Tensor> y_gpu =
        has_bias ? Linear(x_gpu, weight_gpu, bias_on_gpu) : Linear(x_gpu, weight_gpu);
    ASSERT_TRUE(y_gpu.ok()) << y_gpu.status();
    EXPECT_EQ(y_gpu->dtype(), dtype);
    EXPECT_TRUE(AllClose(HostF32(*y_gpu), *y, tolerance));
    if (has_bias) {
      // The ReLU in the epilogue (or after the GEMM where cuBLASLt refuses).
      absl::StatusOr<Tensor> relu = LinearRelu(x, weight, bias);
      absl::StatusOr<Tensor> relu_gpu = LinearRelu(x_gpu, weight_gpu, bias_on_gpu);
      ASSERT_TRUE(relu.ok() && relu_gpu.ok()) << relu.status() << relu_gpu.status();
      EXPECT_TRUE(AllClose(HostF32(*relu_gpu), *relu, tolerance));
    }

    const Tensor dy = RoundedThrough(Random(y->shape(), 4), dtype);
    absl::StatusOr<LinearGrads> grads = LinearBackward(dy, x, weight, has_bias);
    ASSERT_TRUE(grads.ok()) << grads.status();
    absl::StatusOr<LinearGrads> grads_gpu =
        LinearBackward(OnCuda(HostAs(dy, dtype)), x_gpu, weight_gpu, has_bias);
    ASSERT_TRUE(grads_gpu.ok()) << grads_gpu.status();
    EXPECT_TRUE(AllClose(HostF32(grads_gpu->dx), grads->dx, tolerance));
    EXPECT_TRUE(AllClose(HostF32(grads_gpu->dweight), grads->dweight, tolerance));
    EXPECT_EQ(grads_gpu->dbias.defined(), has_bias);
    if (has_bias) {
      EXPECT_TRUE(AllClose(HostF32(grads_gpu->dbias), grads->dbias, tolerance));
    }
    // dx added into a sum in its GEMM.
    const Tensor sum = RoundedThrough(Random(x.shape(), 5), dtype);
    const Tensor sum_gpu = OnCuda(HostAs(sum, dtype));
    absl::StatusOr<LinearGrads> added =
        LinearBackwardAdding(dy, x, weight, *Cast(sum, DType::kF32), has_bias);
    absl::StatusOr<LinearGrads> added_gpu = LinearBackwardAdding(
        OnCuda(HostAs(dy, dtype)), x_gpu, weight_gpu, sum_gpu, has_bias);
    ASSERT_TRUE(added.ok() && added_gpu.ok()) << added.status() << added_gpu.status();
    EXPECT_EQ(added_gpu->dx.raw_data(), sum_gpu.raw_data());  // In place.
    EXPECT_TRUE(AllClose(HostF32(added_gpu->dx), added->dx, tolerance));
    EXPECT_TRUE(AllClose(HostF32(added_gpu->dweight), grads->dweight, tolerance));
  }
}

// Batch-1 decoding (1 x 512 -> 2048), the FFN's products, odd extents,
// leading axes, and empty extents: no rows, and in = 0, where the output is
// the bias and the bias gradient cannot be fused into the (empty) dW GEMM.
TEST(LinearTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    Shape x;
    int64_t out;
  };
  const Case cases[] = {
      {{1, 512}, 2048}, {{37, 129}, 61}, {{300, 512}, 2048}, {{300, 2048}, 512},
      {{2, 3, 7}, 5},   {{0, 8}, 5},     {{3, 0}, 4},        {{1000, 0}, 77},
  };
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " x ", ShapeToString(c.x), " out ", c.out));
      ExpectCudaMatchesCpu(RoundedThrough(Random(c.x, 1), dtype),
                           RoundedThrough(Random({c.out, c.x.back()}, 2), dtype),
                           RoundedThrough(Random({c.out}, 3), dtype), dtype);
    }
  }
}

// A bias one element into its buffer (4-byte aligned in f32, 2-byte in
// bf16): cuBLASLt's bias epilogue may refuse it, and then the output starts
// at the bias and the GEMM accumulates onto it.
TEST(LinearTest, CudaMatchesCpuWithUnalignedBias) {
  TFM_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const Tensor padded_bias = RoundedThrough(Random({65}, 3), dtype);
    const Tensor bias = *padded_bias.Slice(1, 65);
    const Tensor bias_gpu = *OnCuda(HostAs(padded_bias, dtype)).Slice(1, 65);
    ExpectCudaMatchesCpu(RoundedThrough(Random({33, 48}, 1), dtype),
                         RoundedThrough(Random({64, 48}, 2), dtype), bias, dtype, &bias_gpu);
  }
}

// LinearBackwardAdding: dx added into the given sum, in place (its buffer
// is the result's), within rounding of sum + LinearBackward's dx; the
// weight's and bias's gradients are LinearBackward's; a sum shaped unlike x
// is refused naming it.
TEST(LinearTest, AddingPutsDxIntoTheSumInPlace) {
  const Tensor x = Random({37, 29}, 1), weight = Random({13, 29}, 2);
  const Tensor dy = Random({37, 13}, 4), start = Random({37, 29}, 5);
  absl::StatusOr<LinearGrads> grads = LinearBackward(dy, x, weight);
  ASSERT_TRUE(grads.ok()) << grads.status();
  const Tensor sum = *Cast(start, DType::kF32);  // A copy to add into.
  absl::StatusOr<LinearGrads> added = LinearBackwardAdding(dy, x, weight, sum);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->dx.raw_data(), sum.raw_data());
  std::vector<float> expected = start.ToVector<float>();
  const std::vector<float> dx = grads->dx.ToVector<float>();
  for (size_t i = 0; i < expected.size(); ++i) expected[i] += dx[i];
  EXPECT_TRUE(AllClose(added->dx, *Tensor::FromVector<float>(expected, x.shape()),
                       SumTolerance()));
  EXPECT_EQ(added->dweight.ToVector<float>(), grads->dweight.ToVector<float>());
  EXPECT_EQ(added->dbias.ToVector<float>(), grads->dbias.ToVector<float>());
  const absl::Status status =
      LinearBackwardAdding(dy, x, weight, *Tensor::Zeros({37, 28}, DType::kF32)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("dx_sum must be shaped like x"), std::string::npos) << status;
}

// LinearRelu: Relu(Linear(...)) to the bit on the CPU (the same sums, then
// the same max: negatives and -0 to +0, NaN kept).
TEST(LinearTest, ReluIsReluOfLinear) {
  Tensor x = Random({9, 31}, 1);
  x.data<float>()[5] = NAN;  // A NaN row must stay NaN.
  const Tensor w = Random({17, 31}, 2), b = Random({17}, 3);
  absl::StatusOr<Tensor> fused = LinearRelu(x, w, b);
  ASSERT_TRUE(fused.ok()) << fused.status();
  const Tensor separate = *Relu(*Linear(x, w, b));
  ASSERT_EQ(fused->num_elements(), separate.num_elements());
  int zeros = 0;
  for (int64_t i = 0; i < separate.num_elements(); ++i) {
    const float want = separate.data<float>()[i], got = fused->data<float>()[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << i;
    } else {
      EXPECT_EQ(std::memcmp(&want, &got, sizeof(float)), 0) << i << ": " << got << " vs " << want;
    }
    zeros += want == 0.0f;
  }
  EXPECT_GT(zeros, 0);  // Some negatives, or the check would be vacuous.
}

// A NaN row through the CUDA ReLU (cuBLASLt's epilogue, or the kernel after
// the GEMM) gives NaN, as on the CPU, or 0 (linear.h: the epilogue's
// max(x, 0) may drop NaN), never another value; the other rows keep their
// values' NaN-ness (none). The CUDA comparisons above draw no NaN.
TEST(LinearTest, CudaReluOfNaNIsNaNOrZero) {
  TFM_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    Tensor x = RoundedThrough(Random({9, 32}, 1), dtype);
    x.data<float>()[5 * 32 + 3] = NAN;  // Row 5.
    const Tensor w = RoundedThrough(Random({64, 32}, 2), dtype);
    const Tensor b = RoundedThrough(Random({64}, 3), dtype);
    absl::StatusOr<Tensor> want = LinearRelu(x, w, b);
    absl::StatusOr<Tensor> got =
        LinearRelu(OnCuda(HostAs(x, dtype)), OnCuda(HostAs(w, dtype)), OnCuda(HostAs(b, dtype)));
    ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
    const Tensor host = HostF32(*got);
    int64_t nan_rows = 0, zeroed = 0;
    for (int64_t i = 0; i < want->num_elements(); ++i) {
      const float value = host.data<float>()[i];
      if (std::isnan(want->data<float>()[i])) {
        ++nan_rows;
        EXPECT_TRUE(std::isnan(value) || value == 0.0f) << i << ": " << value;
        zeroed += value == 0.0f;
      } else {
        EXPECT_FALSE(std::isnan(value)) << i;
      }
    }
    EXPECT_EQ(nan_rows, 64);  // Row 5, all of it.
    std::printf("%s: %lld of the NaN row's %lld outputs came out 0, the rest NaN\n",
                DTypeName(dtype).data(), static_cast<long long>(zeroed),
                static_cast<long long>(nan_rows));
  }
}

// LinearToF32: on f32 operands Linear's bits; on 16-bit operands on a GPU
// the f32 sums, which the CPU's f32 product of the same (rounded) operands
// matches up to the order of the sums, and which a 16-bit result is within
// one rounding (2^-9 relative for bf16) of.
TEST(LinearTest, ToF32KeepsTheSumsUnrounded) {
  const Tensor x = Random({7, 33}, 1), w = Random({20, 33}, 2);
  absl::StatusOr<Tensor> plain = Linear(x, w), kept = LinearToF32(x, w);
  ASSERT_TRUE(plain.ok() && kept.ok()) << kept.status();
  EXPECT_EQ(kept->ToVector<float>(), plain->ToVector<float>());
}

TEST(LinearTest, CudaToF32KeepsTheSumsUnrounded) {
  TFM_SKIP_WITHOUT_GPU();
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    for (const Shape& x_shape : {Shape{1, 512}, Shape{300, 512}, Shape{37, 129}, Shape{0, 8}}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " x ", ShapeToString(x_shape)));
      const Tensor x = RoundedThrough(Random(x_shape, 1), dtype);
      const Tensor w = RoundedThrough(Random({1000, x_shape.back()}, 2), dtype);
      absl::StatusOr<Tensor> reference = Linear(x, w);
      ASSERT_TRUE(reference.ok()) << reference.status();
      absl::StatusOr<Tensor> kept = LinearToF32(OnCuda(HostAs(x, dtype)), OnCuda(HostAs(w, dtype)));
      ASSERT_TRUE(kept.ok()) << kept.status();
      EXPECT_EQ(kept->dtype(), DType::kF32);
      EXPECT_TRUE(AllClose(HostF32(*kept), *reference, CudaTolerance(DType::kF32)));
      // Rounded, the same product is the 16-bit one's (one rounding apart).
      absl::StatusOr<Tensor> rounded = Linear(OnCuda(HostAs(x, dtype)), OnCuda(HostAs(w, dtype)));
      ASSERT_TRUE(rounded.ok()) << rounded.status();
      EXPECT_TRUE(AllClose(HostF32(*rounded), HostF32(*kept), CudaTolerance(dtype)));
    }
  }
}

TEST(LinearTest, Bf16IsForCudaOnly) {
  const Tensor x = HostAs(Random({2, 3}, 1), DType::kBF16);
  const absl::Status status = Linear(x, HostAs(Random({4, 3}, 2), DType::kBF16)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no kernel for CPU/bf16"), std::string::npos) << status;
  // Mixed dtypes are refused on every device.
  EXPECT_EQ(Linear(Random({2, 3}, 1), HostAs(Random({4, 3}, 2), DType::kBF16)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(LinearTest, BadArgumentsNameTheOpAndShapes) {
  const Tensor x = Random({2, 3}, 1), w = Random({4, 3}, 2);
  absl::Status features = Linear(x, Random({4, 5}, 2)).status();
  EXPECT_EQ(features.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(features.message().find("linear_no_bias: x's last extent 3"), std::string::npos)
      << features;
  EXPECT_NE(features.message().find("f32[4, 5]"), std::string::npos) << features;
  EXPECT_EQ(Linear(x, w, Random({3}, 3)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x, Random({4, 3, 1}, 2)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x, *Tensor::Zeros({4, 3}, DType::kI32)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LinearBackward(Random({2, 5}, 4), x, w).status().code(),
            absl::StatusCode::kInvalidArgument);
  // linear_no_bias's f32_out with a bias or with relu: refused (the CUDA
  // kernel would write f32 through a 16-bit pointer).
  Attrs f32_out;
  f32_out.Set("f32_out", true);
  const absl::Status with_bias = RunOp("linear", {x, w, Random({4}, 3)}, f32_out).status();
  EXPECT_EQ(with_bias.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(with_bias.message().find("f32_out takes no bias and no relu"), std::string::npos)
      << with_bias;
  f32_out.Set("relu", true);
  EXPECT_EQ(RunOp("linear_no_bias", {x, w}, f32_out).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
