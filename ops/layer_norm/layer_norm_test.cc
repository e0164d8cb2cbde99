#include "ops/layer_norm/layer_norm.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/thread_pool.h"
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
using ::tfm::testing::GradientCheckOptions;
using ::tfm::testing::HostAs;
using ::tfm::testing::HostF32;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::SumTolerance;
using ::tfm::testing::Tolerance;
using ::tfm::testing::TorchReference;

Tensor Random(const Shape& shape, uint64_t stream, float low = -1.0f, float high = 1.0f) {
  return *RandomUniform(shape, PhiloxState{23, stream, 0}, low, high);
}

TEST(LayerNormTest, NormalisesRows) {
  const Tensor x = *Tensor::FromVector<float>({1, 2, 3, 4, 10, 10, 10, 10}, {2, 4});
  const Tensor gain = *Tensor::FromVector<float>({1, 1, 1, 1}, {4});
  const Tensor bias = *Tensor::FromVector<float>({0, 0, 0, 1}, {4});
  absl::StatusOr<LayerNormOutputs> out = LayerNorm(x, gain, bias, 0.0 + 1e-5);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->mean.shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(out->mean.data<float>()[0], 2.5f);
  EXPECT_NEAR(out->rstd.data<float>()[0], 1 / std::sqrt(1.25 + 1e-5), 1e-6);
  EXPECT_NEAR(out->out.data<float>()[0], -1.5 / std::sqrt(1.25 + 1e-5), 1e-6);
  EXPECT_EQ(out->out.data<float>()[7], 1.0f);  // A constant row gives the bias.
}

TEST(LayerNormTest, Gradients) {
  const Tensor x = Random({3, 2, 6}, 1), gain = Random({6}, 2, 0.5f, 1.5f),
               bias = Random({6}, 3);
  auto forward = [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<LayerNormOutputs> out = LayerNorm(in[0], in[1], in[2]);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{out->out, out->mean, out->rstd};
  };
  auto backward = [](const std::vector<Tensor>& in, const std::vector<Tensor>& out,
                     const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<LayerNormGrads> grads = LayerNormBackward(dout[0], in[0], in[1], out[1], out[2]);
    if (!grads.ok()) return grads.status();
    return std::vector<Tensor>{grads->dx, grads->dgain, grads->dbias};
  };
  EXPECT_TRUE(CheckGradients(forward, backward, {x, gain, bias},
                             GradientCheckOptions{.outputs_in_loss = {0}}));
}

// d = 512 with a large offset (mean 5 against spread 1) and 300 rows, so both
// the per-row sums and the dgain/dbias sums run long: SumTolerance there.
TEST(LayerNormTest, MatchesTorch) {
  NamedTensors inputs = {
      {"x1", Random({2, 3, 8}, 1)},         {"g1", Random({8}, 2)},
      {"b1", Random({8}, 3)},               {"dy1", Random({2, 3, 8}, 4)},
      {"x2", Random({300, 512}, 5, 4, 6)},  {"g2", Random({512}, 6)},
      {"b2", Random({512}, 7)},             {"dy2", Random({300, 512}, 8)},
      // d = 37: the wide, 8-wide and scalar steps of every row loop.
      {"x3", Random({5, 37}, 9, -3, 2)},    {"g3", Random({37}, 10)},
      {"b3", Random({37}, 11)},             {"dy3", Random({5, 37}, 12)},
      // d = 91 = 2 * 32 + 3 * 8 + 3: the forward's 32-wide, 8-wide and scalar
      // steps of its row sums.
      {"x4", Random({7, 91}, 13, -2, 3)},   {"g4", Random({91}, 14)},
      {"b4", Random({91}, 15)},             {"dy4", Random({7, 91}, 16)},
  };
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      for i in ('1', '2', '3', '4'):
          x, g, b, dy = (globals()[n + i] for n in ('x', 'g', 'b', 'dy'))
          y = F.layer_norm(x, x.shape[-1:], g, b, eps=1e-5)
          globals()['y' + i] = y
          globals()['mean' + i] = x.mean(-1)
          globals()['rstd' + i] = torch.rsqrt(x.var(-1, unbiased=False) + 1e-5)
          globals()['dx' + i], globals()['dg' + i], globals()['db' + i] = grads(y, dy, [x, g, b])
  )py", inputs, {"y1", "mean1", "rstd1", "dx1", "dg1", "db1",
                 "y2", "mean2", "rstd2", "dx2", "dg2", "db2",
                 "y3", "mean3", "rstd3", "dx3", "dg3", "db3",
                 "y4", "mean4", "rstd4", "dx4", "dg4", "db4"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const std::string i : {"1", "2", "3", "4"}) {
    const Tensor& x = inputs.at("x" + i);
    const Tensor& g = inputs.at("g" + i);
    absl::StatusOr<LayerNormOutputs> out = LayerNorm(x, g, inputs.at("b" + i));
    ASSERT_TRUE(out.ok()) << out.status();
    absl::StatusOr<LayerNormGrads> grads =
        LayerNormBackward(inputs.at("dy" + i), x, g, out->mean, out->rstd);
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_TRUE(AllClose(out->out, ref->at("y" + i))) << i;
    EXPECT_TRUE(AllClose(out->mean, ref->at("mean" + i))) << i;
    EXPECT_TRUE(AllClose(out->rstd, ref->at("rstd" + i))) << i;
    EXPECT_TRUE(AllClose(grads->dx, ref->at("dx" + i), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dgain, ref->at("dg" + i), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dbias, ref->at("db" + i), SumTolerance())) << i;
  }
}

// The dgain and dbias sums run over all rows; their chunks are cut by the
// shape, so 1, 2 and 3 threads give the same bits. 250 x 256 is a training
// batch of the small Multi30k preset; 7 x 91 is below one chunk.
TEST(LayerNormTest, ThreadCountDoesNotChangeTheBits) {
  for (const Shape& shape : {Shape{250, 256}, Shape{4, 1000, 64}, Shape{7, 91}}) {
    const int64_t d = shape.back();
    const Tensor x = Random(shape, 1, -2, 3), dy = Random(shape, 2);
    const Tensor gain = Random({d}, 3, 0.5f, 1.5f), bias = Random({d}, 4);
    std::vector<Tensor> reference;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      ThreadPool::ScopedDefault scope(&pool);
      absl::StatusOr<LayerNormOutputs> out = LayerNorm(x, gain, bias);
      ASSERT_TRUE(out.ok()) << out.status();
      absl::StatusOr<LayerNormGrads> grads = LayerNormBackward(dy, x, gain, out->mean, out->rstd);
      ASSERT_TRUE(grads.ok()) << grads.status();
      const std::vector<Tensor> results = {out->out, grads->dx, grads->dgain, grads->dbias};
      if (reference.empty()) reference = results;
      for (size_t i = 0; i < results.size(); ++i) {
        EXPECT_EQ(std::memcmp(results[i].data<float>(), reference[i].data<float>(),
                              results[i].num_elements() * sizeof(float)),
                  0)
            << "result " << i << " of shape " << ShapeToString(shape) << " on " << threads
            << " threads";
      }
    }
  }
}

TEST(LayerNormTest, BadArgumentsNameTheOpAndShapes) {
  const Tensor x = Random({2, 4}, 1), g = Random({4}, 2), b = Random({4}, 3);
  absl::Status status = LayerNorm(x, Random({3}, 2), b).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("layer_norm: gain must be [4]"), std::string::npos) << status;
  EXPECT_NE(status.message().find("f32[3]"), std::string::npos) << status;
  EXPECT_EQ(LayerNorm(x, g, Random({5}, 3)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayerNorm(x, g, b, -1.0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayerNorm(x, g, b, NAN).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayerNorm(Random({2, 0}, 1), Random({0}, 2), Random({0}, 3)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayerNorm(x, *Tensor::Zeros({4}, DType::kI32), b).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor stats = Random({2}, 4);
  EXPECT_EQ(LayerNormBackward(Random({2, 3}, 5), x, g, stats, stats).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LayerNormBackward(x, x, g, Random({4}, 4), stats).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The CUDA kernels against the CPU kernel, forward and backward: f32 to the
// CPU's rounding, bf16 against the f32 CPU kernel on the bf16-rounded inputs
// (statistics stay f32, so they match as closely as in f32). Shapes: one
// element, odd widths, a warp per row (d <= 1024) and a block per row (d >
// 1024), no rows, and rows enough for several dgain/dbias chunks.
TEST(LayerNormTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const Shape shapes[] = {{1, 1},    {3, 7},    {5, 37}, {2, 3, 512}, {300, 1024},
                          {3, 1025}, {4, 3001}, {0, 8},  {2100, 33}};
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
    const Tolerance elementwise{.atol = bf16 ? 1e-2 : 1e-5, .rtol = bf16 ? 1e-2 : 1e-5};
    const Tolerance sums{.atol = 0.0, .rtol = bf16 ? 1e-2 : 1e-5, .relative_to_max = true};
    uint64_t stream = 100;
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(ShapeToString(shape) + " " + std::string(DTypeName(dtype)));
      const int64_t d = shape.back();
      // A mean of about 1 against a spread of 2.5: the two-pass variance matters.
      const Tensor x = Random(shape, ++stream, -1.5f, 3.5f);
      const Tensor gain = Random({d}, ++stream, 0.5f, 1.5f);
      const Tensor bias = Random({d}, ++stream);
      const Tensor dy = Random(shape, ++stream);
      const Tensor xr = RoundedThrough(x, dtype), gr = RoundedThrough(gain, dtype),
                   br = RoundedThrough(bias, dtype), dyr = RoundedThrough(dy, dtype);
      const Tensor xc = OnCuda(HostAs(x, dtype)), gc = OnCuda(HostAs(gain, dtype));

      absl::StatusOr<LayerNormOutputs> cpu = LayerNorm(xr, gr, br);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      absl::StatusOr<LayerNormOutputs> gpu = LayerNorm(xc, gc, OnCuda(HostAs(bias, dtype)));
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_EQ(gpu->out.dtype(), dtype);
      EXPECT_TRUE(AllClose(HostF32(gpu->out), cpu->out, elementwise));
      EXPECT_TRUE(AllClose(HostF32(gpu->mean), cpu->mean));
      EXPECT_TRUE(AllClose(HostF32(gpu->rstd), cpu->rstd));

      absl::StatusOr<LayerNormGrads> cpu_grads =
          LayerNormBackward(dyr, xr, gr, cpu->mean, cpu->rstd);
      ASSERT_TRUE(cpu_grads.ok()) << cpu_grads.status();
      absl::StatusOr<LayerNormGrads> gpu_grads =
          LayerNormBackward(OnCuda(HostAs(dy, dtype)), xc, gc, gpu->mean, gpu->rstd);
      ASSERT_TRUE(gpu_grads.ok()) << gpu_grads.status();
      EXPECT_TRUE(AllClose(HostF32(gpu_grads->dx), cpu_grads->dx, sums));
      EXPECT_TRUE(AllClose(HostF32(gpu_grads->dgain), cpu_grads->dgain, sums));
      EXPECT_TRUE(AllClose(HostF32(gpu_grads->dbias), cpu_grads->dbias, sums));
    }
  }
}

// dgain and dbias are summed without atomics: every run gives the same bits.
TEST(LayerNormTest, CudaBackwardIsReproducible) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor x = OnCuda(Random({5000, 96}, 1)), gain = OnCuda(Random({96}, 2));
  const Tensor dy = OnCuda(Random({5000, 96}, 3));
  absl::StatusOr<LayerNormOutputs> out = LayerNorm(x, gain, OnCuda(Random({96}, 4)));
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor first = HostF32(LayerNormBackward(dy, x, gain, out->mean, out->rstd)->dgain);
  const Tensor second = HostF32(LayerNormBackward(dy, x, gain, out->mean, out->rstd)->dgain);
  EXPECT_EQ(std::memcmp(first.raw_data(), second.raw_data(), first.nbytes()), 0);
}

// bf16 has CUDA kernels only; on the CPU it is refused by name.
TEST(LayerNormTest, Bf16OnCpuSaysThereIsNoKernel) {
  const Tensor x = HostAs(Random({2, 4}, 1), DType::kBF16);
  const Tensor g = HostAs(Random({4}, 2), DType::kBF16);
  absl::Status status = LayerNorm(x, g, g).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no kernel"), std::string::npos) << status;
  EXPECT_EQ(LayerNorm(x, Random({4}, 2), g).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
