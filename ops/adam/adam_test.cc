#include "ops/adam/adam.h"

#include <cstring>

#include <vector>

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

Tensor Copy(const Tensor& t) { return *Tensor::FromVector<float>(t.span<float>(), t.shape()); }

// The AVX2 body (elements 0..15) and the scalar tail (16..18) must round
// identically: equal inputs everywhere give equal outputs everywhere.
TEST(AdamTest, VectorBodyAndTailAgree) {
  for (const float g : {0.3f, -1e-3f, 7.0f, 0.0f}) {
    Tensor param = *Tensor::FromVector<float>(std::vector<float>(19, 0.25f), {19});
    const Tensor grad = *Tensor::FromVector<float>(std::vector<float>(19, g), {19});
    Tensor m = *Tensor::FromVector<float>(std::vector<float>(19, 0.01f), {19});
    Tensor v = *Tensor::FromVector<float>(std::vector<float>(19, 2e-4f), {19});
    ASSERT_TRUE(AdamUpdate(param, grad, m, v, {.lr = 1e-3, .step = 4}).ok());
    for (int i = 1; i < 19; ++i) {
      EXPECT_EQ(param.data<float>()[i], param.data<float>()[0]) << g << " " << i;
      EXPECT_EQ(m.data<float>()[i], m.data<float>()[0]) << g << " " << i;
      EXPECT_EQ(v.data<float>()[i], v.data<float>()[0]) << g << " " << i;
    }
  }
}

TEST(AdamTest, ThreeStepsMatchTorchOptimAdam) {
  const Tensor initial = *RandomNormal({5, 33}, {9, 0, 0}, 0.0f, 1.0f);
  std::vector<Tensor> grads;
  for (uint64_t s = 1; s <= 3; ++s) grads.push_back(*RandomNormal({5, 33}, {9, s, 0}, 0.0f, 1e-2f));
  Tensor param = Copy(initial);
  Tensor m = *Tensor::Zeros({5, 33}, DType::kF32);
  Tensor v = *Tensor::Zeros({5, 33}, DType::kF32);
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(AdamUpdate(param, grads[step - 1], m, v, {.lr = 7e-4, .step = step}).ok());
  }
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      p = torch.nn.Parameter(initial.detach().clone())
      opt = torch.optim.Adam([p], lr=7e-4, betas=(0.9, 0.98), eps=1e-9)
      for g in (g1, g2, g3):
          p.grad = g.detach().clone()
          opt.step()
      state = opt.state[p]
      param, m, v = p.detach(), state['exp_avg'], state['exp_avg_sq']
  )py", {{"initial", initial}, {"g1", grads[0]}, {"g2", grads[1]}, {"g3", grads[2]}},
      {"param", "m", "v"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(testing::AllClose(param, ref->at("param")));
  EXPECT_TRUE(testing::AllClose(m, ref->at("m")));
  EXPECT_TRUE(testing::AllClose(v, ref->at("v")));
}

TEST(AdamTest, BadArgumentsAreInvalidArgument) {
  const Tensor a = *Tensor::Zeros({3}, DType::kF32);
  const Tensor b = *Tensor::Zeros({4}, DType::kF32);
  absl::Status status = AdamUpdate(a, b, a, a, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("adam: param, grad, m and v must have one shape"),
            std::string::npos)
      << status;
  EXPECT_FALSE(AdamUpdate(a, a, a, a, {.step = 0}).ok());
  EXPECT_FALSE(AdamUpdate(a, a, a, a, {.beta2 = 1.0}).ok());
  const Tensor i = *Tensor::Zeros({3}, DType::kI32);
  EXPECT_EQ(AdamUpdate(i, i, i, i, {}).code(), absl::StatusCode::kInvalidArgument);
}

// Three steps on CUDA against three on the CPU, in place, at sizes around
// the kernel's chunk (4096 elements) and an empty tensor.
TEST(AdamTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  uint64_t stream = 40;
  for (const Shape& shape : {Shape{1}, Shape{7, 3}, Shape{4096}, Shape{4097}, Shape{3, 5, 701},
                             Shape{300001}, Shape{0}}) {
    SCOPED_TRACE(ShapeToString(shape));
    Tensor param = *RandomNormal(shape, {9, ++stream, 0}, 0.0f, 1.0f);
    Tensor m = *RandomNormal(shape, {9, ++stream, 0}, 0.0f, 1e-2f);
    Tensor v = *RandomUniform(shape, {9, ++stream, 0}, 0.0f, 1e-4f);
    Tensor gpu_param = testing::OnCuda(param), gpu_m = testing::OnCuda(m),
           gpu_v = testing::OnCuda(v);
    for (int64_t step = 1; step <= 3; ++step) {
      const Tensor grad = *RandomNormal(shape, {9, ++stream, 0}, 0.0f, 1e-2f);
      const AdamOptions options{.lr = 7e-4, .step = step};
      ASSERT_TRUE(AdamUpdate(param, grad, m, v, options).ok());
      const absl::Status status =
          AdamUpdate(gpu_param, testing::OnCuda(grad), gpu_m, gpu_v, options);
      ASSERT_TRUE(status.ok()) << status;
    }
    EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_param), param));
    EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_m), m));
    EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_v), v));
  }
}

}  // namespace
}  // namespace tfm
