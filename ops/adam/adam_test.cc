#include "ops/adam/adam.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/op_registry.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "ops/adam/grad_norm.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

Tensor Copy(const Tensor& t) { return *Tensor::FromVector<float>(t.span<float>(), t.shape()); }

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

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

// Decoupled weight decay, against torch.optim.AdamW. A decay of 1.0 moves
// each weight by lr * |w| a step, far beyond the tolerance: a kernel that
// ignored it would fail (checked below against plain Adam).
TEST(AdamTest, WeightDecayMatchesTorchOptimAdamW) {
  const Tensor initial = *RandomNormal({5, 33}, {9, 0, 0}, 0.0f, 1.0f);
  std::vector<Tensor> grads;
  for (uint64_t s = 1; s <= 3; ++s) grads.push_back(*RandomNormal({5, 33}, {9, s, 0}, 0.0f, 1e-2f));
  Tensor param = Copy(initial), plain = Copy(initial);
  Tensor m = *Tensor::Zeros({5, 33}, DType::kF32), plain_m = Copy(m);
  Tensor v = *Tensor::Zeros({5, 33}, DType::kF32), plain_v = Copy(v);
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_TRUE(
        AdamUpdate(param, grads[step - 1], m, v, {.lr = 7e-4, .step = step, .weight_decay = 1.0})
            .ok());
    ASSERT_TRUE(AdamUpdate(plain, grads[step - 1], plain_m, plain_v, {.lr = 7e-4, .step = step})
                    .ok());
  }
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      p = torch.nn.Parameter(initial.detach().clone())
      opt = torch.optim.AdamW([p], lr=7e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=1.0)
      for g in (g1, g2, g3):
          p.grad = g.detach().clone()
          opt.step()
      param = p.detach()
  )py", {{"initial", initial}, {"g1", grads[0]}, {"g2", grads[1]}, {"g3", grads[2]}},
      {"param"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(testing::AllClose(param, ref->at("param")));
  EXPECT_FALSE(testing::AllClose(plain, ref->at("param")));
  // The moments do not see the decay.
  EXPECT_TRUE(SameBits(m, plain_m));
  EXPECT_TRUE(SameBits(v, plain_v));
  const Tensor a = *Tensor::Zeros({3}, DType::kF32);
  EXPECT_FALSE(AdamUpdate(a, a, a, a, {.weight_decay = -1}).ok());
  EXPECT_FALSE(AdamUpdate(a, a, a, a, {.weight_decay = NAN}).ok());
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
      // Decoupled weight decay on the odd steps.
      const AdamOptions options{.lr = 7e-4, .step = step, .weight_decay = step % 2 ? 0.1 : 0.0};
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

// Tensors one element into their buffers (not 16-byte aligned: the
// kernel's element-by-element path) beside aligned gradients.
TEST(AdamTest, CudaMatchesCpuOnViewsOffTheAlignment) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t n = 10001;
  Tensor param = *RandomNormal({n + 1}, {9, 90, 0}, 0.0f, 1.0f);
  Tensor m = *RandomNormal({n + 1}, {9, 91, 0}, 0.0f, 1e-2f);
  Tensor v = *RandomUniform({n + 1}, {9, 92, 0}, 0.0f, 1e-4f);
  Tensor gpu_param = *testing::OnCuda(param).Slice(1, n + 1);
  Tensor gpu_m = *testing::OnCuda(m).Slice(1, n + 1);
  Tensor gpu_v = *testing::OnCuda(v).Slice(1, n + 1);
  param = *param.Slice(1, n + 1);
  m = *m.Slice(1, n + 1);
  v = *v.Slice(1, n + 1);
  for (int64_t step = 1; step <= 2; ++step) {
    const Tensor grad = *RandomNormal({n}, {9, 93 + static_cast<uint64_t>(step), 0}, 0.0f, 1e-2f);
    const AdamOptions options{.lr = 7e-4, .step = step};
    ASSERT_TRUE(AdamUpdate(param, grad, m, v, options).ok());
    const absl::Status status = AdamUpdate(gpu_param, testing::OnCuda(grad), gpu_m, gpu_v, options);
    ASSERT_TRUE(status.ok()) << status;
  }
  EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_param), param));
  EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_m), m));
  EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu_v), v));
}

// A model's worth of tensors in miniature: sizes around the CPU's 64K and
// CUDA's 4096-element chunks, a ragged tail, an empty tensor.
const std::vector<Shape>& ListShapes() {
  static const std::vector<Shape> shapes = {Shape{1},     Shape{7, 3},   Shape{4096},
                                            Shape{0},     Shape{4097},   Shape{3, 5, 701},
                                            Shape{65537}, Shape{300001}, Shape{19}};
  return shapes;
}

struct AdamState {
  std::vector<Tensor> param, m, v;
};

AdamState RandomState(uint64_t seed) {
  AdamState state;
  uint64_t stream = 0;
  for (const Shape& shape : ListShapes()) {
    state.param.push_back(*RandomNormal(shape, {seed, ++stream, 0}, 0.0f, 1.0f));
    state.m.push_back(*RandomNormal(shape, {seed, ++stream, 0}, 0.0f, 1e-2f));
    state.v.push_back(*RandomUniform(shape, {seed, ++stream, 0}, 0.0f, 1e-4f));
  }
  return state;
}

std::vector<Tensor> RandomGrads(uint64_t seed, float stddev) {
  std::vector<Tensor> grads;
  uint64_t stream = 0;
  for (const Shape& shape : ListShapes()) {
    grads.push_back(*RandomNormal(shape, {seed, ++stream, 0}, 0.0f, stddev));
  }
  return grads;
}

std::vector<Tensor> Copies(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> copies;
  for (const Tensor& t : tensors) copies.push_back(Copy(t));
  return copies;
}

AdamState Copies(const AdamState& state) {
  return {Copies(state.param), Copies(state.m), Copies(state.v)};
}

std::vector<AdamTensors> ListOf(const AdamState& state, const std::vector<Tensor>& grads) {
  std::vector<AdamTensors> list;
  for (size_t i = 0; i < grads.size(); ++i) {
    list.push_back({state.param[i], grads[i], state.m[i], state.v[i]});
  }
  return list;
}

void ExpectSameBits(const AdamState& actual, const AdamState& expected) {
  for (size_t i = 0; i < expected.param.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    EXPECT_TRUE(SameBits(actual.param[i], expected.param[i]));
    EXPECT_TRUE(SameBits(actual.m[i], expected.m[i]));
    EXPECT_TRUE(SameBits(actual.v[i], expected.v[i]));
  }
}

// multi_tensor_adam against ClipGradNorm then adam tensor by tensor, three
// steps: the same bits, with the clip biting (max_norm 0.5 of a norm near
// 1.24), with it too loose to bite, and without clipping; on 1 and 3
// threads.
TEST(AdamTest, MultiTensorEqualsPerTensorBitForBit) {
  for (const double max_norm : {0.5, 1e3, 0.0}) {
    for (const int threads : {1, 3}) {
      SCOPED_TRACE("max_norm " + std::to_string(max_norm) + ", " + std::to_string(threads) +
                   " threads");
      ThreadPool pool(threads);
      ThreadPool::ScopedDefault scoped(&pool);
      const AdamState initial = RandomState(21);
      AdamState per_tensor = Copies(initial), multi = Copies(initial);
      for (int64_t step = 1; step <= 3; ++step) {
        const std::vector<Tensor> grads = RandomGrads(30 + step, 2e-3f);
        const std::vector<Tensor> clipped = Copies(grads);
        if (max_norm > 0) {
          ASSERT_TRUE(ClipGradNorm(clipped, max_norm).ok());
        }
        // With weight decay where the clip bites.
        const AdamOptions options{
            .lr = 7e-4, .step = step, .weight_decay = max_norm == 0.5 ? 0.01 : 0.0};
        for (size_t i = 0; i < grads.size(); ++i) {
          ASSERT_TRUE(AdamUpdate(per_tensor.param[i], clipped[i], per_tensor.m[i],
                                 per_tensor.v[i], options)
                          .ok());
        }
        absl::StatusOr<Tensor> sum = GradSumOfSquares(grads);
        ASSERT_TRUE(sum.ok()) << sum.status();
        if (step == 1 && threads == 1) {
          std::printf("max_norm %g, gradient norm %.6g\n", max_norm,
                      std::sqrt(*ReadSumOfSquares(*sum)));
        }
        const std::vector<Tensor> before = Copies(grads);
        const absl::Status status =
            MultiTensorAdamUpdate(ListOf(multi, grads), *sum, max_norm, options);
        ASSERT_TRUE(status.ok()) << status;
        // The gradients are read, not clipped in place.
        for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(SameBits(grads[i], before[i]));
      }
      ExpectSameBits(multi, per_tensor);
    }
  }
}

TEST(AdamTest, MultiTensorHandsBackItsStateAndTakesAnEmptyList) {
  const AdamState state = RandomState(5);
  const std::vector<Tensor> grads = RandomGrads(6, 1e-2f);
  const Tensor sum = *GradSumOfSquares(grads);
  std::vector<Tensor> inputs;
  for (const AdamTensors& t : ListOf(state, grads)) {
    inputs.insert(inputs.end(), {t.param, t.grad, t.m, t.v});
  }
  inputs.push_back(sum);
  inputs.push_back(sum);  // The guard.
  Attrs attrs = AdamAttrs({.step = 1});
  attrs.Set("max_norm", 1.0);
  absl::StatusOr<std::vector<Tensor>> out = RunOp("multi_tensor_adam", inputs, attrs);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3 * grads.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    EXPECT_TRUE((*out)[3 * i].SharesBufferWith(state.param[i]));
    EXPECT_TRUE((*out)[3 * i + 1].SharesBufferWith(state.m[i]));
    EXPECT_TRUE((*out)[3 * i + 2].SharesBufferWith(state.v[i]));
  }
  EXPECT_TRUE(MultiTensorAdamUpdate({}, sum, 1.0, {}).ok());
}

// A non-finite sum of squares or guard skips the whole update where it
// runs; a finite pair applies it exactly as a call without a guard.
void ExpectSkipsNonFiniteUpdates(const Device& device) {
  const auto on_device = [&](const Tensor& t) {
    return device.is_cuda() ? testing::OnCuda(t) : Copy(t);
  };
  const auto state_on_device = [&](const AdamState& state) {
    AdamState copy;
    for (size_t i = 0; i < state.param.size(); ++i) {
      copy.param.push_back(on_device(state.param[i]));
      copy.m.push_back(on_device(state.m[i]));
      copy.v.push_back(on_device(state.v[i]));
    }
    return copy;
  };
  const auto on_host = [](const AdamState& state) {
    AdamState host;
    for (size_t i = 0; i < state.param.size(); ++i) {
      host.param.push_back(testing::HostF32(state.param[i]));
      host.m.push_back(testing::HostF32(state.m[i]));
      host.v.push_back(testing::HostF32(state.v[i]));
    }
    return host;
  };
  const AdamState initial = RandomState(31);
  std::vector<Tensor> grads;
  for (const Tensor& g : RandomGrads(32, 1e-2f)) grads.push_back(on_device(g));
  const Tensor sum = *GradSumOfSquares(grads);
  const auto scalar = [&](float value) {
    return on_device(*Tensor::FromVector<float>(std::vector<float>{value}, {}));
  };
  const AdamOptions options{.lr = 1e-3, .step = 2};
  for (const float bad : {NAN, INFINITY, -INFINITY}) {
    SCOPED_TRACE("bad value " + std::to_string(bad));
    AdamState state = state_on_device(initial);
    const Tensor finite = scalar(3.5f), non_finite = scalar(bad);
    // The guard (the trainer's loss) is not finite.
    ASSERT_TRUE(MultiTensorAdamUpdate(ListOf(state, grads), sum, 1.0, options, &non_finite).ok());
    ExpectSameBits(on_host(state), initial);
    // The sum of squares is not finite, clipped or not.
    for (const double max_norm : {0.0, 1.0}) {
      ASSERT_TRUE(
          MultiTensorAdamUpdate(ListOf(state, grads), non_finite, max_norm, options, &finite)
              .ok());
      ASSERT_TRUE(MultiTensorAdamUpdate(ListOf(state, grads), non_finite, max_norm, options).ok());
      ExpectSameBits(on_host(state), initial);
    }
    // Finite: applied, with the bits of a call without a guard.
    AdamState unguarded = state_on_device(initial);
    ASSERT_TRUE(MultiTensorAdamUpdate(ListOf(state, grads), sum, 1.0, options, &finite).ok());
    ASSERT_TRUE(MultiTensorAdamUpdate(ListOf(unguarded, grads), sum, 1.0, options).ok());
    ExpectSameBits(on_host(state), on_host(unguarded));
    EXPECT_FALSE(SameBits(testing::HostF32(state.param[0]), initial.param[0]));
  }
}

TEST(AdamTest, MultiTensorSkipsANonFiniteUpdate) { ExpectSkipsNonFiniteUpdates(Device::Cpu()); }

TEST(AdamTest, MultiTensorSkipsANonFiniteUpdateOnCuda) {
  TFM_SKIP_WITHOUT_GPU();
  ExpectSkipsNonFiniteUpdates(Device::Cuda(0));
}

TEST(AdamTest, MultiTensorErrorsNameTheEntry) {
  const Tensor a = *Tensor::Zeros({3}, DType::kF32);
  const Tensor b = *Tensor::Zeros({4}, DType::kF32);
  const Tensor sum = *Tensor::Zeros({}, DType::kF32);
  auto message = [](const absl::Status& status) { return std::string(status.message()); };
  const absl::Status shapes = MultiTensorAdamUpdate({{a, a, a, a}, {a, b, a, a}}, sum, 1.0, {});
  EXPECT_EQ(shapes.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(message(shapes).find("multi_tensor_adam: list entry 1: param, grad, m and v must "
                                 "have one shape (inputs: param[1]=f32[3] on cpu, grad[1]=f32[4]"),
            std::string::npos)
      << shapes;
  const Tensor i = *Tensor::Zeros({3}, DType::kI32);
  EXPECT_NE(message(MultiTensorAdamUpdate({{a, a, a, a}, {a, a, i, a}}, sum, 1.0, {}))
                .find("input 'm[1]' is i32 but the kernel runs in f32"),
            std::string::npos);
  EXPECT_NE(message(MultiTensorAdamUpdate({{a, a, a, a}}, a, 1.0, {}))
                .find("grad_sum_of_squares must be an f32 scalar"),
            std::string::npos);
  EXPECT_NE(message(MultiTensorAdamUpdate({{a, a, a, a}}, sum, 1.0, {}, &a))
                .find("skip_guard must be an f32 scalar"),
            std::string::npos);
  EXPECT_NE(message(MultiTensorAdamUpdate({{a, a, a, a}}, sum, -1.0, {}))
                .find("max_norm -1 must be finite and >= 0"),
            std::string::npos);
  EXPECT_NE(message(MultiTensorAdamUpdate({{a, a, a, a}}, sum, 1.0, {.step = 0}))
                .find("step 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(message(RunOp("multi_tensor_adam", {a, a, a, a, a, sum, sum}, AdamAttrs({})).status())
                .find("expected 4 inputs per list entry (param, grad, m, v) followed by "
                      "grad_sum_of_squares, skip_guard; got 7 inputs"),
            std::string::npos);
}

// multi_tensor_adam on CUDA against the CPU, three steps over the list with
// the clip biting; prints the largest differences it found.
TEST(AdamTest, MultiTensorCudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const AdamState cpu = RandomState(23);
  AdamState gpu;
  for (size_t i = 0; i < cpu.param.size(); ++i) {
    gpu.param.push_back(testing::OnCuda(cpu.param[i]));
    gpu.m.push_back(testing::OnCuda(cpu.m[i]));
    gpu.v.push_back(testing::OnCuda(cpu.v[i]));
  }
  for (int64_t step = 1; step <= 3; ++step) {
    const std::vector<Tensor> grads = RandomGrads(40 + step, 2e-3f);
    std::vector<Tensor> gpu_grads;
    for (const Tensor& g : grads) gpu_grads.push_back(testing::OnCuda(g));
    const AdamOptions options{.lr = 7e-4, .step = step};
    ASSERT_TRUE(MultiTensorAdamUpdate(ListOf(cpu, grads), *GradSumOfSquares(grads), 0.5, options)
                    .ok());
    const absl::Status status = MultiTensorAdamUpdate(
        ListOf(gpu, gpu_grads), *GradSumOfSquares(gpu_grads), 0.5, options);
    ASSERT_TRUE(status.ok()) << status;
  }
  double max_param = 0, max_m = 0, max_v = 0;
  for (size_t i = 0; i < cpu.param.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    const Tensor param = testing::HostF32(gpu.param[i]), m = testing::HostF32(gpu.m[i]),
                 v = testing::HostF32(gpu.v[i]);
    EXPECT_TRUE(testing::AllClose(param, cpu.param[i]));
    EXPECT_TRUE(testing::AllClose(m, cpu.m[i]));
    EXPECT_TRUE(testing::AllClose(v, cpu.v[i]));
    for (int64_t k = 0; k < param.num_elements(); ++k) {
      max_param = std::max<double>(max_param, std::fabs(param.data<float>()[k] -
                                                        cpu.param[i].data<float>()[k]));
      max_m = std::max<double>(max_m, std::fabs(m.data<float>()[k] - cpu.m[i].data<float>()[k]));
      max_v = std::max<double>(max_v, std::fabs(v.data<float>()[k] - cpu.v[i].data<float>()[k]));
    }
  }
  std::printf("multi_tensor_adam CUDA vs CPU, 3 clipped steps over %zu tensors: max |diff| "
              "param %.3g, m %.3g, v %.3g (tolerance 1e-5 abs + 1e-5 rel)\n",
              cpu.param.size(), max_param, max_m, max_v);
}

}  // namespace
}  // namespace tfm
