#include "ops/residual_layer_norm/residual_layer_norm.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "ops/add/add.h"
#include "ops/dropout/dropout.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/random/random.h"
#include "ops/residual_layer_norm/backward_chunks.h"
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
using ::tfm::testing::OnCuda;
using ::tfm::testing::RoundedThrough;
using ::tfm::testing::Tolerance;

Tensor Random(const Shape& shape, uint64_t stream, float low = -1.0f, float high = 1.0f) {
  return *RandomUniform(shape, PhiloxState{29, stream, 0}, low, high);
}

::testing::AssertionResult SameBits(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape() || actual.dtype() != expected.dtype()) {
    return ::testing::AssertionFailure() << ShapeToString(actual.shape()) << " vs "
                                         << ShapeToString(expected.shape());
  }
  const float* a = actual.data<float>();
  const float* e = expected.data<float>();
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    if (std::memcmp(&a[i], &e[i], sizeof(float)) != 0) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << e[i] << " (of "
             << actual.num_elements() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// One problem: inputs of `shape`, dropout p with a state whose offset is odd
// (so the mask's blocks are not aligned with anything in particular).
struct Problem {
  Problem(const Shape& shape, double p, uint64_t stream) {
    const int64_t d = shape.back();
    x = Random(shape, stream, -1.5f, 3.5f);
    h = Random(shape, stream + 1);
    h_bias = Random({d}, stream + 2);
    gain = Random({d}, stream + 3, 0.5f, 1.5f);
    bias = Random({d}, stream + 4);
    dout = Random(shape, stream + 5);
    dropout = ResidualDropout{p, PhiloxState{7, stream, 13}};
  }
  Tensor x, h, h_bias, gain, bias, dout;
  ResidualDropout dropout;
};

// Shapes: rows of d not a multiple of 4 (rows start inside a Philox block)
// and shorter than a vector, d = 37 and 91 (every loop's tails), model
// widths, and more rows than one backward chunk.
const Shape kShapes[] = {{3, 7}, {1, 1}, {5, 37}, {7, 91}, {2, 3, 64}, {250, 256}, {33, 512}};

// The op against dropout, add and layer_norm one after the other, forward
// and backward, bit for bit: residual.cc relies on it to train as before.
TEST(ResidualLayerNormTest, EqualsTheComposedOpsBitForBit) {
  uint64_t stream = 100;
  for (const double p : {0.0, 0.1, 0.5, 1.0}) {
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(ShapeToString(shape) + " p = " + std::to_string(p));
      const Problem in(shape, p, stream += 10);
      absl::StatusOr<ResidualLayerNormOutputs> fused =
          ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, in.bias, in.dropout);
      ASSERT_TRUE(fused.ok()) << fused.status();

      const Tensor dropped = p > 0.0 ? *Dropout(in.h, p, in.dropout.state) : in.h;
      const Tensor sum = *Add(in.x, dropped);
      absl::StatusOr<LayerNormOutputs> composed = LayerNorm(sum, in.gain, in.bias);
      ASSERT_TRUE(composed.ok()) << composed.status();
      EXPECT_TRUE(SameBits(fused->sum, sum));
      EXPECT_TRUE(SameBits(fused->out, composed->out));
      EXPECT_TRUE(SameBits(fused->mean, composed->mean));
      EXPECT_TRUE(SameBits(fused->rstd, composed->rstd));

      absl::StatusOr<ResidualLayerNormGrads> grads =
          ResidualLayerNormBackward(in.dout, *fused, in.gain, in.dropout, false);
      ASSERT_TRUE(grads.ok()) << grads.status();
      absl::StatusOr<LayerNormGrads> norm_grads =
          LayerNormBackward(in.dout, sum, in.gain, composed->mean, composed->rstd);
      ASSERT_TRUE(norm_grads.ok()) << norm_grads.status();
      const Tensor dh =
          p > 0.0 ? *DropoutBackward(norm_grads->dx, p, in.dropout.state) : norm_grads->dx;
      EXPECT_TRUE(SameBits(grads->dx, norm_grads->dx));
      EXPECT_TRUE(SameBits(grads->dh, dh));
      EXPECT_TRUE(SameBits(grads->dgain, norm_grads->dgain));
      EXPECT_TRUE(SameBits(grads->dbias, norm_grads->dbias));
      EXPECT_FALSE(grads->dh_bias.defined());
    }
  }
}

// With h_bias: h + h_bias is formed before the mask (as add's broadcast),
// and dh_bias is dh summed over rows (in other chunks than add's column
// sums: within 1e-6 of the largest).
TEST(ResidualLayerNormTest, HBiasIsAddedBeforeTheDropout) {
  uint64_t stream = 500;
  for (const double p : {0.0, 0.3}) {
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(ShapeToString(shape) + " p = " + std::to_string(p));
      const Problem in(shape, p, stream += 10);
      absl::StatusOr<ResidualLayerNormOutputs> fused =
          ResidualLayerNorm(in.x, in.h, in.h_bias, in.gain, in.bias, in.dropout);
      ASSERT_TRUE(fused.ok()) << fused.status();
      const Tensor biased = *Add(in.h, in.h_bias);
      const Tensor dropped = p > 0.0 ? *Dropout(biased, p, in.dropout.state) : biased;
      const Tensor sum = *Add(in.x, dropped);
      absl::StatusOr<LayerNormOutputs> composed = LayerNorm(sum, in.gain, in.bias);
      ASSERT_TRUE(composed.ok()) << composed.status();
      EXPECT_TRUE(SameBits(fused->sum, sum));
      EXPECT_TRUE(SameBits(fused->out, composed->out));

      absl::StatusOr<ResidualLayerNormGrads> grads =
          ResidualLayerNormBackward(in.dout, *fused, in.gain, in.dropout, true);
      ASSERT_TRUE(grads.ok()) << grads.status();
      ASSERT_TRUE(grads->dh_bias.defined());
      EXPECT_TRUE(AllClose(grads->dh_bias, *SumToShape(grads->dh, in.h_bias),
                           Tolerance{.atol = 0.0, .rtol = 1e-6, .relative_to_max = true}));
    }
  }
}

// Finite differences through every input, with dropout on (the mask is
// fixed by the state, so the function is smooth in all of them).
TEST(ResidualLayerNormTest, Gradients) {
  for (const double p : {0.0, 0.25}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    const Problem in({3, 2, 6}, p, 900);
    auto forward = [&](const std::vector<Tensor>& t) -> absl::StatusOr<std::vector<Tensor>> {
      absl::StatusOr<ResidualLayerNormOutputs> out =
          ResidualLayerNorm(t[0], t[1], t[2], t[3], t[4], in.dropout);
      if (!out.ok()) return out.status();
      return std::vector<Tensor>{out->out, out->sum, out->mean, out->rstd};
    };
    auto backward = [&](const std::vector<Tensor>& t, const std::vector<Tensor>& out,
                        const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
      const ResidualLayerNormOutputs saved{out[0], out[1], out[2], out[3]};
      absl::StatusOr<ResidualLayerNormGrads> grads =
          ResidualLayerNormBackward(dout[0], saved, t[3], in.dropout, true);
      if (!grads.ok()) return grads.status();
      return std::vector<Tensor>{grads->dx, grads->dh, grads->dh_bias, grads->dgain, grads->dbias};
    };
    EXPECT_TRUE(CheckGradients(forward, backward, {in.x, in.h, in.h_bias, in.gain, in.bias},
                               GradientCheckOptions{.outputs_in_loss = {0}}));
  }
}

// Rows and chunks are cut by the shape: 1, 2 and 3 threads give the same bits.
TEST(ResidualLayerNormTest, ThreadCountDoesNotChangeTheBits) {
  for (const Shape& shape : {Shape{250, 256}, Shape{4, 300, 64}, Shape{7, 91}}) {
    const Problem in(shape, 0.1, 40);
    std::vector<Tensor> reference;
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      ThreadPool::ScopedDefault scope(&pool);
      absl::StatusOr<ResidualLayerNormOutputs> out =
          ResidualLayerNorm(in.x, in.h, in.h_bias, in.gain, in.bias, in.dropout);
      ASSERT_TRUE(out.ok()) << out.status();
      absl::StatusOr<ResidualLayerNormGrads> grads =
          ResidualLayerNormBackward(in.dout, *out, in.gain, in.dropout, true);
      ASSERT_TRUE(grads.ok()) << grads.status();
      const std::vector<Tensor> results = {out->out,     grads->dx,    grads->dh,
                                           grads->dgain, grads->dbias, grads->dh_bias};
      if (reference.empty()) reference = results;
      for (size_t i = 0; i < results.size(); ++i) {
        EXPECT_TRUE(SameBits(results[i], reference[i]))
            << "result " << i << " of shape " << ShapeToString(shape) << " on " << threads
            << " threads";
      }
    }
  }
}

TEST(ResidualLayerNormTest, BadArgumentsNameTheOpAndWhat) {
  const Problem in({2, 4}, 0.1, 1);
  auto message = [](const absl::StatusOr<ResidualLayerNormOutputs>& out) {
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
    return std::string(out.status().message());
  };
  EXPECT_NE(message(ResidualLayerNorm(in.x, Random({2, 5}, 1), std::nullopt, in.gain, in.bias,
                                      in.dropout))
                .find("residual_layer_norm: h must have x's shape"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, Random({3}, 1), in.gain, in.bias, in.dropout))
                .find("residual_bias_layer_norm: h_bias must be [4]"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, std::nullopt, Random({5}, 1), in.bias,
                                      in.dropout))
                .find("gain must be [4]"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, Random({5}, 1),
                                      in.dropout))
                .find("bias must be [4]"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, in.bias,
                                      ResidualDropout{1.5, {}}))
                .find("p = 1.5 is not in [0, 1]"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, in.bias, in.dropout,
                                      -1.0))
                .find("eps = -1 must be finite"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(Random({2, 0}, 1), Random({2, 0}, 2), std::nullopt,
                                      Random({0}, 3), Random({0}, 4), in.dropout))
                .find("x must be [..., d] with d >= 1"),
            std::string::npos);
  EXPECT_NE(message(ResidualLayerNorm(in.x, in.h, std::nullopt, *Tensor::Zeros({4}, DType::kI32),
                                      in.bias, in.dropout))
                .find("must share one dtype"),
            std::string::npos);
  absl::StatusOr<ResidualLayerNormOutputs> out =
      ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, in.bias, in.dropout);
  ASSERT_TRUE(out.ok()) << out.status();
  ResidualLayerNormOutputs wrong_stats = *out;
  wrong_stats.mean = Random({4}, 5);
  absl::Status status =
      ResidualLayerNormBackward(in.dout, wrong_stats, in.gain, in.dropout, false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("mean and rstd must be [2]"), std::string::npos) << status;
  status = ResidualLayerNormBackward(Random({2, 3}, 6), *out, in.gain, in.dropout, false).status();
  EXPECT_NE(status.message().find("dout must have sum's shape"), std::string::npos) << status;
}

// bf16 has CUDA kernels only; on the CPU it is refused by name.
TEST(ResidualLayerNormTest, Bf16OnCpuSaysThereIsNoKernel) {
  const Tensor x = HostAs(Random({2, 4}, 1), DType::kBF16);
  const Tensor g = HostAs(Random({4}, 2), DType::kBF16);
  absl::Status status = ResidualLayerNorm(x, x, std::nullopt, g, g, {}).status();
  EXPECT_NE(status.message().find("no kernel"), std::string::npos) << status;
}

// The CUDA kernels against the CPU kernels, forward and backward, with and
// without h_bias and dropout: f32 within 1e-5 (the same mask, the same
// two-pass statistics, sums in another order), bf16 against the f32 CPU
// kernels on the bf16-rounded inputs within 1e-2 (one bf16 rounding of sum
// and of each output; the statistics stay f32 and match to 1e-5). Shapes: one element, rows
// inside Philox blocks (d = 7, 37), a warp per row (d <= 1024) and a block
// per row (d > 1024), no rows, and rows enough for several column chunks;
// the row kernels' layouts (d = 40: 1 quad a lane, 200: 2, 512: 4, 1024: 8,
// 2048: the backward's block per row, over 2 chunks) and the general
// kernels past the row kernels' longest row (4100); small enough for
// compute-sanitizer. Prints the largest differences.
// The fused CUDA backward's chunks (one block each): every row in exactly
// one chunk, never more chunks than the workspace holds, and whole waves of
// the resident blocks where the rows allow.
TEST(ResidualLayerNormTest, BackwardChunksCoverTheRowsInWholeWaves) {
  constexpr int64_t kTarget = 128, kMin = 16, kMax = 1024;
  for (const int64_t rows : {1, 7, 16, 17, 129, 1000, 12288, 27648, 100000, 3000000}) {
    for (const int64_t resident : {1, 2, 132, 264, 528, 1056, 5000}) {
      SCOPED_TRACE(std::to_string(rows) + " rows, " + std::to_string(resident) + " resident");
      const RowChunks chunks = ChunksInWholeWaves(rows, resident, kTarget, kMin, kMax);
      ASSERT_GE(chunks.rows_per_chunk, 1);
      EXPECT_GE(chunks.count * chunks.rows_per_chunk, rows);
      EXPECT_LT((chunks.count - 1) * chunks.rows_per_chunk, rows);  // No empty chunk.
      EXPECT_LE(chunks.count, MostChunksInWholeWaves(rows, kMin, kMax));
      EXPECT_LE(chunks.count, kMax);
      if (rows >= kMin) EXPECT_GE(chunks.rows_per_chunk, kMin);
      // With rows for a wave of minimum chunks, the waves they take at
      // least 90% full (rounding the rows per chunk up can leave a few
      // blocks of the last wave out).
      if (rows >= resident * kMin && resident <= kMax) {
        const int64_t waves = (chunks.count + resident - 1) / resident;
        EXPECT_GE(chunks.count * 10, waves * resident * 9)
            << chunks.count << " chunks of " << chunks.rows_per_chunk << " rows";
      }
    }
  }
  EXPECT_EQ(ChunksInWholeWaves(0, 132, kTarget, kMin, kMax).count, 0);
  // The big update's rows on an H200 (132 one-block multiprocessors): two
  // full waves, where 128-row chunks gave 216 blocks (1.6 waves).
  const RowChunks big = ChunksInWholeWaves(27648, 132, kTarget, kMin, kMax);
  EXPECT_EQ(big.rows_per_chunk, 105);
  EXPECT_EQ(big.count, 264);
  // The Multi30k GPU preset's rows where 264 blocks are resident: one wave.
  const RowChunks small = ChunksInWholeWaves(12288, 264, kTarget, kMin, kMax);
  EXPECT_EQ(small.rows_per_chunk, 47);
  EXPECT_EQ(small.count, 262);
}

TEST(ResidualLayerNormTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  // The row kernels' layouts among them: a warp per row at 1 to 8 quads a
  // lane with one or two rows loaded ahead ({300, 512}), the block per row
  // at 2 and 4 quads ({130, 2048}, {130, 4096}), and past their limit.
  const Shape shapes[] = {{1, 1},      {3, 7},      {5, 37},     {2, 3, 512}, {300, 1024},
                          {3, 1025},   {0, 8},      {2100, 33},  {9, 40},     {4, 200},
                          {130, 2048}, {2, 4100},   {300, 512},  {130, 4096}};
  uint64_t stream = 2000;
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
    const Tolerance elementwise{.atol = bf16 ? 1e-2 : 1e-5, .rtol = bf16 ? 1e-2 : 1e-5};
    const Tolerance sums{.atol = 0.0, .rtol = bf16 ? 1e-2 : 1e-5, .relative_to_max = true};
    for (const double p : {0.0, 0.1}) {
      for (const bool with_h_bias : {false, true}) {
        for (const Shape& shape : shapes) {
          SCOPED_TRACE(ShapeToString(shape) + " " + std::string(DTypeName(dtype)) + " p = " +
                       std::to_string(p) + (with_h_bias ? " with h_bias" : ""));
          const Problem in(shape, p, stream += 10);
          auto rounded = [&](const Tensor& t) { return RoundedThrough(t, dtype); };
          auto gpu = [&](const Tensor& t) { return OnCuda(HostAs(t, dtype)); };
          std::optional<Tensor> cpu_h_bias, gpu_h_bias;
          if (with_h_bias) {
            cpu_h_bias = rounded(in.h_bias);
            gpu_h_bias = gpu(in.h_bias);
          }
          absl::StatusOr<ResidualLayerNormOutputs> cpu =
              ResidualLayerNorm(rounded(in.x), rounded(in.h), cpu_h_bias, rounded(in.gain),
                                rounded(in.bias), in.dropout);
          ASSERT_TRUE(cpu.ok()) << cpu.status();
          absl::StatusOr<ResidualLayerNormOutputs> cuda = ResidualLayerNorm(
              gpu(in.x), gpu(in.h), gpu_h_bias, gpu(in.gain), gpu(in.bias), in.dropout);
          ASSERT_TRUE(cuda.ok()) << cuda.status();
          EXPECT_EQ(cuda->out.dtype(), dtype);
          EXPECT_EQ(cuda->mean.dtype(), DType::kF32);
          EXPECT_TRUE(AllClose(HostF32(cuda->sum), cpu->sum, elementwise));
          // The rest against the CPU kernels on the GPU's sum (bf16: rounded
          // once), so that each result measures its own kernel's error:
          // x = that sum, h = 0 and no dropout give it back exactly.
          const Tensor cuda_sum = HostF32(cuda->sum);
          absl::StatusOr<ResidualLayerNormOutputs> on_sum = ResidualLayerNorm(
              cuda_sum, *Tensor::Zeros(shape, DType::kF32), std::nullopt, rounded(in.gain),
              rounded(in.bias), ResidualDropout{});
          ASSERT_TRUE(on_sum.ok()) << on_sum.status();
          EXPECT_TRUE(AllClose(HostF32(cuda->out), on_sum->out, elementwise));
          EXPECT_TRUE(AllClose(HostF32(cuda->mean), on_sum->mean));
          EXPECT_TRUE(AllClose(HostF32(cuda->rstd), on_sum->rstd));

          absl::StatusOr<ResidualLayerNormGrads> cpu_grads = ResidualLayerNormBackward(
              rounded(in.dout), *on_sum, rounded(in.gain), in.dropout, with_h_bias);
          ASSERT_TRUE(cpu_grads.ok()) << cpu_grads.status();
          absl::StatusOr<ResidualLayerNormGrads> cuda_grads = ResidualLayerNormBackward(
              gpu(in.dout), *cuda, gpu(in.gain), in.dropout, with_h_bias);
          ASSERT_TRUE(cuda_grads.ok()) << cuda_grads.status();
          EXPECT_TRUE(AllClose(HostF32(cuda_grads->dx), cpu_grads->dx, sums));
          EXPECT_TRUE(AllClose(HostF32(cuda_grads->dh), cpu_grads->dh, sums));
          EXPECT_TRUE(AllClose(HostF32(cuda_grads->dgain), cpu_grads->dgain, sums));
          EXPECT_TRUE(AllClose(HostF32(cuda_grads->dbias), cpu_grads->dbias, sums));
          if (with_h_bias) {
            EXPECT_TRUE(AllClose(HostF32(cuda_grads->dh_bias), cpu_grads->dh_bias, sums));
          }
        }
      }
    }
    std::printf("residual_layer_norm CUDA vs CPU, %s: every shape within rtol %g (sums of rows "
                "relative to the largest)\n",
                std::string(DTypeName(dtype)).c_str(), bf16 ? 1e-2 : 1e-5);
  }
}

// The CUDA mask is the CPU's: with p = 0.5 every element of dh is zero on
// one device exactly where it is zero on the other.
TEST(ResidualLayerNormTest, CudaDrawsTheCpuMask) {
  TFM_SKIP_WITHOUT_GPU();
  const Problem in({37, 91}, 0.5, 3000);
  absl::StatusOr<ResidualLayerNormOutputs> cpu =
      ResidualLayerNorm(in.x, in.h, std::nullopt, in.gain, in.bias, in.dropout);
  absl::StatusOr<ResidualLayerNormOutputs> cuda = ResidualLayerNorm(
      OnCuda(in.x), OnCuda(in.h), std::nullopt, OnCuda(in.gain), OnCuda(in.bias), in.dropout);
  ASSERT_TRUE(cpu.ok() && cuda.ok());
  const Tensor cpu_dh = ResidualLayerNormBackward(in.dout, *cpu, in.gain, in.dropout, false)->dh;
  const Tensor cuda_dh = HostF32(
      ResidualLayerNormBackward(OnCuda(in.dout), *cuda, OnCuda(in.gain), in.dropout, false)->dh);
  int64_t kept = 0;
  for (int64_t i = 0; i < cpu_dh.num_elements(); ++i) {
    ASSERT_EQ(cpu_dh.data<float>()[i] == 0.0f, cuda_dh.data<float>()[i] == 0.0f) << i;
    kept += cpu_dh.data<float>()[i] != 0.0f;
  }
  std::printf("residual_layer_norm: the same mask on both devices, %lld of %lld kept\n",
              static_cast<long long>(kept), static_cast<long long>(cpu_dh.num_elements()));
}

// dgain, dbias and dh_bias are summed without atomics: every run gives the
// same bits (f32 rows of 96, and bf16 rows of 1024 over 5 chunks).
TEST(ResidualLayerNormTest, CudaBackwardIsReproducible) {
  TFM_SKIP_WITHOUT_GPU();
  const struct {
    Shape shape;
    DType dtype;
  } cases[] = {{{5000, 96}, DType::kF32}, {{600, 1024}, DType::kBF16}};
  for (const auto& c : cases) {
    SCOPED_TRACE(ShapeToString(c.shape) + " " + std::string(DTypeName(c.dtype)));
    const Problem in(c.shape, 0.1, 4000);
    auto gpu = [&](const Tensor& t) { return OnCuda(HostAs(t, c.dtype)); };
    const Tensor x = gpu(in.x), h = gpu(in.h), gain = gpu(in.gain);
    absl::StatusOr<ResidualLayerNormOutputs> out =
        ResidualLayerNorm(x, h, gpu(in.h_bias), gain, gpu(in.bias), in.dropout);
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor dout = gpu(in.dout);
    absl::StatusOr<ResidualLayerNormGrads> first =
        ResidualLayerNormBackward(dout, *out, gain, in.dropout, true);
    absl::StatusOr<ResidualLayerNormGrads> second =
        ResidualLayerNormBackward(dout, *out, gain, in.dropout, true);
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_TRUE(SameBits(HostF32(first->dgain), HostF32(second->dgain)));
    EXPECT_TRUE(SameBits(HostF32(first->dbias), HostF32(second->dbias)));
    EXPECT_TRUE(SameBits(HostF32(first->dh_bias), HostF32(second->dh_bias)));
  }
}

// A view that starts one element into its buffer: the same values as
// OnCuda(HostAs(t, dtype)), not aligned for the row kernels' quads.
Tensor UnalignedOnCuda(const Tensor& t, DType dtype) {
  const int64_t n = t.num_elements();
  Tensor padded = *Tensor::Zeros({n + 1}, DType::kF32);
  std::memcpy(padded.data<float>() + 1, t.data<float>(), n * sizeof(float));
  return *OnCuda(HostAs(padded, dtype)).Slice(1, n + 1)->Reshape(t.shape());
}

// The row kernels (rows of a multiple of 4, aligned tensors) against the
// general kernels, which take the same problem when x or dout starts off a
// quad: out, sum, mean, rstd, dx and dh bit for bit (the same arithmetic in
// the same order), dgain, dbias and dh_bias as sums of the same terms in
// another order. Rows of 1024 (a warp per row, 3 chunks, the last partial),
// 2048 (the backward's block per row; the general forward on both sides)
// and 40 (1 quad on 10 of the 32 lanes).
TEST(ResidualLayerNormTest, CudaRowKernelsEqualTheGeneralKernels) {
  TFM_SKIP_WITHOUT_GPU();
  uint64_t stream = 5000;
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const Tolerance sums{
        .atol = 0.0, .rtol = dtype == DType::kF32 ? 1e-5 : 1e-2, .relative_to_max = true};
    for (const Shape& shape : {Shape{300, 1024}, Shape{130, 2048}, Shape{9, 40}, Shape{300, 512},
                               Shape{130, 4096}}) {
      SCOPED_TRACE(ShapeToString(shape) + " " + std::string(DTypeName(dtype)));
      const Problem in(shape, 0.1, stream += 10);
      auto gpu = [&](const Tensor& t) { return OnCuda(HostAs(t, dtype)); };
      const Tensor h = gpu(in.h), h_bias = gpu(in.h_bias), gain = gpu(in.gain),
                   bias = gpu(in.bias);
      absl::StatusOr<ResidualLayerNormOutputs> rows =
          ResidualLayerNorm(gpu(in.x), h, h_bias, gain, bias, in.dropout);
      absl::StatusOr<ResidualLayerNormOutputs> general =
          ResidualLayerNorm(UnalignedOnCuda(in.x, dtype), h, h_bias, gain, bias, in.dropout);
      ASSERT_TRUE(rows.ok()) << rows.status();
      ASSERT_TRUE(general.ok()) << general.status();
      EXPECT_TRUE(SameBits(HostF32(rows->sum), HostF32(general->sum)));
      EXPECT_TRUE(SameBits(HostF32(rows->out), HostF32(general->out)));
      EXPECT_TRUE(SameBits(HostF32(rows->mean), HostF32(general->mean)));
      EXPECT_TRUE(SameBits(HostF32(rows->rstd), HostF32(general->rstd)));

      absl::StatusOr<ResidualLayerNormGrads> row_grads =
          ResidualLayerNormBackward(gpu(in.dout), *rows, gain, in.dropout, true);
      absl::StatusOr<ResidualLayerNormGrads> general_grads = ResidualLayerNormBackward(
          UnalignedOnCuda(in.dout, dtype), *rows, gain, in.dropout, true);
      ASSERT_TRUE(row_grads.ok()) << row_grads.status();
      ASSERT_TRUE(general_grads.ok()) << general_grads.status();
      EXPECT_TRUE(SameBits(HostF32(row_grads->dx), HostF32(general_grads->dx)));
      EXPECT_TRUE(SameBits(HostF32(row_grads->dh), HostF32(general_grads->dh)));
      EXPECT_TRUE(AllClose(HostF32(row_grads->dgain), HostF32(general_grads->dgain), sums));
      EXPECT_TRUE(AllClose(HostF32(row_grads->dbias), HostF32(general_grads->dbias), sums));
      EXPECT_TRUE(AllClose(HostF32(row_grads->dh_bias), HostF32(general_grads->dh_bias), sums));
    }
  }
}

}  // namespace
}  // namespace tfm
