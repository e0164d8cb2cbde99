#include "ops/adam/grad_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
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

// The CPU kernel's order, written out: each tensor in double over chunks of
// 16384 added in order, a chunk as 8 interleaved sums (element i to sum
// i % 8 of the chunk) added pairwise (0+4, 1+5, ..., then 0+2, 1+3, then
// 0+1), the tensors' sums added to an f32 total in order.
float ReferenceSumOfSquares(const std::vector<Tensor>& xs) {
  constexpr int64_t kChunk = 1 << 14;
  float total = 0.0f;
  for (const Tensor& x : xs) {
    double sum = 0.0;
    for (int64_t begin = 0; begin < x.num_elements(); begin += kChunk) {
      double lanes[8] = {};
      for (int64_t i = begin; i < std::min(x.num_elements(), begin + kChunk); ++i) {
        lanes[(i - begin) % 8] += static_cast<double>(x.data<float>()[i]) * x.data<float>()[i];
      }
      for (int width = 4; width >= 1; width /= 2) {
        for (int lane = 0; lane < width; ++lane) lanes[lane] += lanes[lane + width];
      }
      sum += lanes[0];
    }
    total = static_cast<float>(total + sum);
  }
  return total;
}

float SumOfSquares(const std::vector<Tensor>& xs) {
  absl::StatusOr<Tensor> sum = GradSumOfSquares(xs);
  EXPECT_TRUE(sum.ok()) << sum.status();
  if (!sum.ok()) return NAN;
  EXPECT_EQ(sum->device(), xs[0].device());
  return static_cast<float>(*ReadSumOfSquares(*sum));
}

std::vector<Tensor> RandomList(const std::vector<int64_t>& sizes, uint64_t seed) {
  std::vector<Tensor> xs;
  uint64_t stream = 0;
  for (const int64_t n : sizes) xs.push_back(*RandomNormal({n}, {seed, ++stream, 0}, 0.5f, 2.0f));
  return xs;
}

// One launch over the list gives the bits of the per-tensor order on any
// number of threads.
TEST(GradNormTest, MultiTensorSumIsTheFixedOrderOnAnyThreads) {
  const std::vector<Tensor> xs = RandomList({3, 0, 16384, 16385, 70001, 1, 300000}, 12);
  const float expected = ReferenceSumOfSquares(xs);
  for (const int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    ThreadPool::ScopedDefault scoped(&pool);
    const float actual = SumOfSquares(xs);
    EXPECT_EQ(std::memcmp(&actual, &expected, sizeof(float)), 0)
        << threads << " threads: " << actual << " vs " << expected;
  }
  EXPECT_EQ(SumOfSquares({*Tensor::FromVector<float>({1.0f, -2.0f, 3.0f}, {3})}), 14.0f);
}

TEST(GradNormTest, MultiTensorSumErrorsNameTheEntry) {
  const Tensor f = *Tensor::Zeros({2}, DType::kF32);
  const Tensor i = *Tensor::Zeros({2}, DType::kI32);
  const absl::Status mixed = GradSumOfSquares({f, f, i}).status();
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("multi_tensor_sum_of_squares: input 'x[2]' is i32 but the "
                                 "kernel runs in f32"),
            std::string::npos)
      << mixed;
  EXPECT_EQ(GradSumOfSquares({}).status().code(), absl::StatusCode::kInvalidArgument);
}

// multi_tensor_sum_of_squares and scale_in_place on CUDA against the CPU,
// f32 and bf16 (the reference runs in f32 on the bf16-rounded values), over
// a list with sizes around the 16384-element chunks and over single
// tensors; the sum is the same bits on every run. Prints the relative
// differences.
TEST(GradNormTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  uint64_t seed = 50;
  const std::vector<std::vector<int64_t>> lists = {
      {0}, {1}, {16385}, {1000003}, {3, 0, 16384, 16385, 70001, 1, 1000003}};
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const std::vector<int64_t>& sizes : lists) {
      SCOPED_TRACE(std::to_string(sizes.size()) + " tensors, the last of " +
                   std::to_string(sizes.back()) + ", " + std::string(DTypeName(dtype)));
      const std::vector<Tensor> xs = RandomList(sizes, ++seed);
      std::vector<Tensor> rounded, on_gpu;
      for (const Tensor& x : xs) {
        rounded.push_back(testing::RoundedThrough(x, dtype));
        on_gpu.push_back(testing::OnCuda(testing::HostAs(x, dtype)));
      }
      const float expected = SumOfSquares(rounded);
      const float actual = SumOfSquares(on_gpu);
      EXPECT_NEAR(actual, expected, 1e-6 * expected);
      std::printf("sum of squares, %zu tensors (last %lld), %s: CUDA %.9g CPU %.9g (relative "
                  "difference %.3g, tolerance 1e-6)\n",
                  sizes.size(), static_cast<long long>(sizes.back()),
                  std::string(DTypeName(dtype)).c_str(), actual, expected,
                  expected > 0 ? std::fabs(actual - expected) / expected : 0.0);
      const float again = SumOfSquares(on_gpu);
      EXPECT_EQ(std::memcmp(&actual, &again, sizeof(float)), 0);

      Attrs attrs;
      attrs.Set("factor", 0.37);
      ASSERT_TRUE(RunOp("scale_in_place", {rounded.back()}, attrs).ok());
      ASSERT_TRUE(RunOp("scale_in_place", {on_gpu.back()}, attrs).ok());
      const double tolerance = dtype == DType::kBF16 ? 1e-2 : 1e-6;
      EXPECT_TRUE(testing::AllClose(testing::HostF32(on_gpu.back()), rounded.back(),
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
