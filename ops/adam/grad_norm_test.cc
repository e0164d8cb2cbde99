#include "ops/adam/grad_norm.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "gtest/gtest.h"
#include "ops/fill/fill.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

TEST(GradNormTest, ClippingMatchesTorch) {
  const Tensor a = *RandomNormal({40, 30}, {10, 0, 0}, 0.0f, 1.0f);
  const Tensor b = *RandomNormal({70000}, {10, 1, 0}, 0.0f, 0.1f);  // Several chunks.
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      ps = [torch.nn.Parameter(torch.zeros_like(t)) for t in (a, b)]
      for p, t in zip(ps, (a, b)):
          p.grad = t.detach().clone()
      norm = torch.nn.utils.clip_grad_norm_(ps, max_norm=5.0).double()
      ca, cb = ps[0].grad, ps[1].grad
  )py", {{"a", a}, {"b", b}}, {"norm", "ca", "cb"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<double> norm = ClipGradNorm({a, b}, 5.0);
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_NEAR(*norm, ref->at("norm").data<float>()[0], 1e-5 * *norm);
  EXPECT_TRUE(testing::AllClose(a, ref->at("ca")));
  EXPECT_TRUE(testing::AllClose(b, ref->at("cb")));
  // Now within the limit: unchanged, and the norm is max_norm (up to 1e-6).
  const std::vector<float> before = a.ToVector<float>();
  EXPECT_NEAR(*ClipGradNorm({a, b}, 10.0), 5.0, 1e-4);
  EXPECT_EQ(a.ToVector<float>(), before);
}

TEST(GradNormTest, NonFiniteNormIsAnErrorWhenAsked) {
  const Tensor a = *Tensor::FromVector<float>({1.0f, NAN}, {2});
  EXPECT_TRUE(std::isnan(*GlobalGradNorm({a})));
  absl::Status status = ClipGradNorm({a}, 1.0, /*error_if_nonfinite=*/true).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ClipGradNorm({a}, 0.0).ok());
  EXPECT_EQ(GlobalGradNorm({*Tensor::Zeros({2}, DType::kI32)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

float SumOfSquares(const Tensor& x) {
  absl::StatusOr<Tensor> total = Fill({}, 0.0, DType::kF32, x.device());
  EXPECT_TRUE(total.ok()) << total.status();
  if (!total.ok()) return NAN;
  absl::StatusOr<std::vector<Tensor>> out = RunOp("sum_of_squares", {x, *total});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? testing::HostF32(out->at(0)).data<float>()[0] : NAN;
}

TEST(GradNormTest, SumOfSquaresAccumulatesIntoTotal) {
  const Tensor x = *Tensor::FromVector<float>({1.0f, -2.0f, 3.0f}, {3});
  const Tensor total = *Tensor::FromVector<float>({2.5f}, {});
  ASSERT_TRUE(RunOp("sum_of_squares", {x, total}).ok());
  ASSERT_TRUE(RunOp("sum_of_squares", {x, total}).ok());
  EXPECT_EQ(total.data<float>()[0], 2.5f + 2 * 14.0f);
  const Tensor wrong = *Tensor::FromVector<float>({0.0f, 0.0f}, {2});
  EXPECT_EQ(RunOp("sum_of_squares", {x, wrong}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// sum_of_squares and scale_in_place on CUDA against the CPU, f32 and bf16
// (the reference runs in f32 on the bf16-rounded values), at sizes around
// the 16384-element chunks; the sum is the same bits on every run.
TEST(GradNormTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  uint64_t stream = 50;
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int64_t n : {int64_t{0}, int64_t{1}, int64_t{16385}, int64_t{1000003}}) {
      SCOPED_TRACE(std::to_string(n) + " " + std::string(DTypeName(dtype)));
      const Tensor x = *RandomNormal({n}, {10, ++stream, 0}, 0.5f, 2.0f);
      const Tensor rounded = testing::RoundedThrough(x, dtype);
      const Tensor on_gpu = testing::OnCuda(testing::HostAs(x, dtype));
      const float expected = SumOfSquares(rounded);
      const float actual = SumOfSquares(on_gpu);
      EXPECT_NEAR(actual, expected, 1e-6 * expected);
      const float again = SumOfSquares(on_gpu);
      EXPECT_EQ(std::memcmp(&actual, &again, sizeof(float)), 0);

      Attrs attrs;
      attrs.Set("factor", 0.37);
      ASSERT_TRUE(RunOp("scale_in_place", {rounded}, attrs).ok());
      ASSERT_TRUE(RunOp("scale_in_place", {on_gpu}, attrs).ok());
      const double tolerance = dtype == DType::kBF16 ? 1e-2 : 1e-6;
      EXPECT_TRUE(testing::AllClose(testing::HostF32(on_gpu), rounded,
                                    {.atol = tolerance, .rtol = tolerance}));
    }
  }
}

// Clipping gradients that live on the GPU goes through the same ops.
TEST(GradNormTest, CudaClipping) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor a = *RandomNormal({40, 30}, {10, 0, 0}, 0.0f, 1.0f);
  const Tensor b = *RandomNormal({70000}, {10, 1, 0}, 0.0f, 0.1f);
  const Tensor gpu_a = testing::OnCuda(a), gpu_b = testing::OnCuda(b);
  absl::StatusOr<double> norm = ClipGradNorm({a, b}, 5.0);
  absl::StatusOr<double> gpu_norm = ClipGradNorm({gpu_a, gpu_b}, 5.0);
  ASSERT_TRUE(gpu_norm.ok()) << gpu_norm.status();
  EXPECT_NEAR(*gpu_norm, *norm, 1e-6 * *norm);
  EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_a), a));
  EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_b), b));
}

}  // namespace
}  // namespace tfm
