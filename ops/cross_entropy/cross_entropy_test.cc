#include "ops/cross_entropy/cross_entropy.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

Tensor Scalar(float value) { return *Tensor::FromVector<float>({value}, {}); }

TEST(CrossEntropyTest, TorchParityWithPaddingAndSmoothing) {
  const int64_t n = 37, vocab = 1003;  // Vocabulary not a multiple of 8.
  const Tensor logits = *RandomNormal({n, vocab}, {8, 0, 0}, 0.0f, 3.0f);
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i % 5 == 0 ? 1 : (i * 131) % vocab;
  const Tensor targets = *Tensor::FromVector<int64_t>(values, {n});
  const CrossEntropyOptions options{.epsilon = 0.1f, .padding_index = 1};
  CrossEntropyOutput out = *LabelSmoothedCrossEntropy(logits, targets, options);
  const Tensor d_loss = Scalar(0.5f);
  Tensor d_logits = *LabelSmoothedCrossEntropyBackward(logits, targets, out.lse, d_loss, options);
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      x = logits.double()
      loss = F.cross_entropy(x, targets, ignore_index=1, label_smoothing=0.1, reduction='sum')
      nll = F.nll_loss(F.log_softmax(x, -1), targets, ignore_index=1, reduction='sum')
      count = (targets != 1).sum()
      d_logits, = grads(loss, d_loss.double(), [logits])
  )py", {{"logits", logits}, {"targets", targets}, {"d_loss", d_loss}},
      {"loss", "nll", "count", "d_logits"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  // The peer hands 0-d results back as [1].
  EXPECT_TRUE(testing::AllClose(*out.loss.Reshape({1}), ref->at("loss")));
  EXPECT_TRUE(testing::AllClose(*out.nll.Reshape({1}), ref->at("nll")));
  EXPECT_EQ(out.count.ToVector<int64_t>(), ref->at("count").ToVector<int64_t>());
  EXPECT_TRUE(testing::AllClose(d_logits, ref->at("d_logits")));
  // i32 targets give the same numbers.
  std::vector<int32_t> narrow(values.begin(), values.end());
  EXPECT_EQ(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int32_t>(narrow, {n}), options)
                ->loss.ToVector<float>(),
            out.loss.ToVector<float>());
}

TEST(CrossEntropyTest, GradientMatchesFiniteDifferences) {
  const Tensor targets = *Tensor::FromVector<int32_t>({2, 0, 6, 3, 6}, {5});
  const CrossEntropyOptions options{.epsilon = 0.2f, .padding_index = 3};
  testing::ForwardFn forward = [&](const std::vector<Tensor>& in)
      -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<CrossEntropyOutput> out = LabelSmoothedCrossEntropy(in[0], targets, options);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{out->loss, out->lse};
  };
  testing::BackwardFn backward = [&](const std::vector<Tensor>& in,
                                     const std::vector<Tensor>& out,
                                     const std::vector<Tensor>& d_out)
      -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> d_logits =
        LabelSmoothedCrossEntropyBackward(in[0], targets, out[1], d_out[0], options);
    if (!d_logits.ok()) return d_logits.status();
    return std::vector<Tensor>{*d_logits};
  };
  EXPECT_TRUE(testing::CheckGradients(forward, backward,
                                      {*RandomNormal({5, 7}, {8, 1, 0}, 0.0f, 1.0f)},
                                      testing::GradientCheckOptions{.outputs_in_loss = {0}}));
}

TEST(CrossEntropyTest, OutOfRangeTargetIsInvalidArgument) {
  const Tensor logits = *RandomNormal({2, 4}, {8, 0, 0}, 0.0f, 1.0f);
  absl::Status status =
      LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1, 4}, {2})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("label_smoothed_cross_entropy: target 4 of row 1"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[2, 4]"), std::string::npos);
  EXPECT_FALSE(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1}, {1})).ok());
  EXPECT_FALSE(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1, 2}, {2}),
                                         {.epsilon = 1.5f})
                   .ok());
}

// Targets for n rows of a vocabulary of v: every seventh row padding, the
// others spread over the vocabulary (the first and last class included).
template <typename Target>
Tensor Targets(int64_t n, int64_t v, int64_t padding_index) {
  std::vector<Target> values(n);
  for (int64_t i = 0; i < n; ++i) {
    values[i] = static_cast<Target>(i % 7 == 3 ? padding_index : (i * 7919 + i / 2) % v);
  }
  if (n > 1) values[1] = static_cast<Target>(v - 1);
  return *Tensor::FromVector<Target>(values, {n});
}

// The CUDA kernels against the CPU ones, forward and backward: f32 and bf16
// logits (the reference is the f32 CPU kernel on the bf16-rounded logits, so
// the f32 outputs match as closely as in f32; only d_logits is rounded),
// i32 and i64 targets, padding inside and outside the vocabulary, a warp per
// row (V <= 1024) and a block per row up to the Transformer's 37k.
TEST(CrossEntropyTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t n, v, padding_index;
    float epsilon;
  };
  const Case cases[] = {{1, 1, -1, 0.1f},     {9, 5, 0, 0.1f},     {37, 1003, 1, 0.1f},
                        {20, 1024, -1, 0.0f}, {11, 1025, 7, 0.2f}, {6, 37000, 0, 0.1f},
                        {0, 13, -1, 0.1f},    {300, 50, 2, 1.0f}};
  uint64_t stream = 300;
  for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const bool bf16 = dtype != DType::kF32;  // Or f16: bf16's bounds hold it.
    for (const Case& c : cases) {
      for (const bool wide_targets : {false, true}) {
        SCOPED_TRACE(absl::StrCat(c.n, "x", c.v, " padding ", c.padding_index, " ",
                                  DTypeName(dtype), wide_targets ? " i64" : " i32"));
        const Tensor logits = *RandomNormal({c.n, c.v}, {8, ++stream, 0}, 0.5f, 3.0f);
        const Tensor targets = wide_targets ? Targets<int64_t>(c.n, c.v, c.padding_index)
                                            : Targets<int32_t>(c.n, c.v, c.padding_index);
        const CrossEntropyOptions options{.epsilon = c.epsilon, .padding_index = c.padding_index};
        const Tensor rounded = testing::RoundedThrough(logits, dtype);
        const Tensor on_gpu = testing::OnCuda(testing::HostAs(logits, dtype));
        const Tensor gpu_targets = testing::OnCuda(targets);
        absl::StatusOr<CrossEntropyOutput> cpu =
            LabelSmoothedCrossEntropy(rounded, targets, options);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        absl::StatusOr<CrossEntropyOutput> gpu =
            LabelSmoothedCrossEntropy(on_gpu, gpu_targets, options);
        ASSERT_TRUE(gpu.ok()) << gpu.status();
        EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu->loss), cpu->loss));
        EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu->nll), cpu->nll));
        EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu->lse), cpu->lse));
        EXPECT_EQ(CopyToDevice(gpu->count, Device::Cpu())->ToVector<int64_t>(),
                  cpu->count.ToVector<int64_t>());

        const Tensor d_loss = Scalar(0.75f);
        absl::StatusOr<Tensor> cpu_d =
            LabelSmoothedCrossEntropyBackward(rounded, targets, cpu->lse, d_loss, options);
        ASSERT_TRUE(cpu_d.ok()) << cpu_d.status();
        absl::StatusOr<Tensor> gpu_d = LabelSmoothedCrossEntropyBackward(
            on_gpu, gpu_targets, gpu->lse, testing::OnCuda(d_loss), options);
        ASSERT_TRUE(gpu_d.ok()) << gpu_d.status();
        EXPECT_EQ(gpu_d->dtype(), dtype);
        const testing::Tolerance tolerance{.atol = bf16 ? 1e-2 : 1e-6, .rtol = bf16 ? 1e-2 : 1e-5};
        EXPECT_TRUE(testing::AllClose(testing::HostF32(*gpu_d), *cpu_d, tolerance));

        // Targets the caller checked: no wait for the kernels' own check,
        // and the very same bits.
        CrossEntropyOptions checked = options;
        checked.targets_checked = true;
        absl::StatusOr<CrossEntropyOutput> unchecked =
            LabelSmoothedCrossEntropy(on_gpu, gpu_targets, checked);
        ASSERT_TRUE(unchecked.ok()) << unchecked.status();
        EXPECT_EQ(testing::HostF32(unchecked->loss).ToVector<float>(),
                  testing::HostF32(gpu->loss).ToVector<float>());
        absl::StatusOr<Tensor> unchecked_d = LabelSmoothedCrossEntropyBackward(
            on_gpu, gpu_targets, gpu->lse, testing::OnCuda(d_loss), checked);
        ASSERT_TRUE(unchecked_d.ok()) << unchecked_d.status();
        EXPECT_EQ(testing::HostF32(*unchecked_d).ToVector<float>(),
                  testing::HostF32(*gpu_d).ToVector<float>());
      }
    }
  }
}

// A bad target fails on CUDA with the CPU's message, in both directions.
// Logits one element into their buffer: rows lie off 16 bytes by another
// amount than the gradient's fresh rows (the backward's element-by-element
// path) and the forward reads each row's head and tail one by one.
TEST(CrossEntropyTest, CudaMatchesCpuOnAViewOffTheAlignment) {
  TFM_SKIP_WITHOUT_GPU();
  const int64_t n = 7, v = 1031;
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const Tensor buffer = *RandomNormal({n * v + 1}, {8, 77, 0}, 0.5f, 3.0f);
    const Tensor logits = *buffer.Slice(1, n * v + 1)->Reshape({n, v});
    const Tensor on_gpu = *testing::OnCuda(testing::HostAs(buffer, dtype))
                               .Slice(1, n * v + 1)
                               ->Reshape({n, v});
    const Tensor targets = Targets<int32_t>(n, v, 3);
    const CrossEntropyOptions options{.epsilon = 0.1f, .padding_index = 3};
    const Tensor rounded = testing::RoundedThrough(logits, dtype);
    absl::StatusOr<CrossEntropyOutput> cpu = LabelSmoothedCrossEntropy(rounded, targets, options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    absl::StatusOr<CrossEntropyOutput> gpu =
        LabelSmoothedCrossEntropy(on_gpu, testing::OnCuda(targets), options);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu->loss), cpu->loss));
    EXPECT_TRUE(testing::AllClose(testing::HostF32(gpu->lse), cpu->lse));
    const Tensor d_loss = Scalar(1.5f);
    absl::StatusOr<Tensor> cpu_d =
        LabelSmoothedCrossEntropyBackward(rounded, targets, cpu->lse, d_loss, options);
    ASSERT_TRUE(cpu_d.ok()) << cpu_d.status();
    absl::StatusOr<Tensor> gpu_d = LabelSmoothedCrossEntropyBackward(
        on_gpu, testing::OnCuda(targets), gpu->lse, testing::OnCuda(d_loss), options);
    ASSERT_TRUE(gpu_d.ok()) << gpu_d.status();
    const bool bf16 = dtype != DType::kF32;
    const testing::Tolerance tolerance{.atol = bf16 ? 1e-2 : 1e-6, .rtol = bf16 ? 1e-2 : 1e-5};
    EXPECT_TRUE(testing::AllClose(testing::HostF32(*gpu_d), *cpu_d, tolerance));
  }
}

// Logits [4, v] with a NaN as row 0's first element, through row 1's first
// 8 (a 16-bit pack) and as row 2's last (beside a -inf); row 3 has none.
Tensor NaNLogits(int64_t v) {
  const int64_t n = 4;
  std::vector<float> values(n * v);
  for (int64_t i = 0; i < n * v; ++i) values[i] = static_cast<float>(i % 7) - 3.0f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  values[0] = nan;
  for (int64_t j = 0; j < 8; ++j) values[v + j] = nan;
  values[2 * v + v - 1] = nan;
  values[2 * v + 1] = -std::numeric_limits<float>::infinity();
  return *Tensor::FromVector<float>(values, {n, v});
}

// Which rows' lse is NaN.
std::vector<bool> NaNRows(const Tensor& lse) {
  std::vector<bool> rows;
  for (const float value : testing::HostF32(lse).ToVector<float>()) rows.push_back(std::isnan(value));
  return rows;
}

// A NaN logit makes the loss NaN (the smoothing term sums every logit), so
// the trainer's non-finite check skips the update. (The CPU's vectorized
// exp may leave that row's lse finite; the GPU's keeps the NaN, below.)
TEST(CrossEntropyTest, NaNLogitsGiveANaNLoss) {
  const CrossEntropyOptions options{.epsilon = 0.1f, .padding_index = -1};
  for (const int64_t v : {8, 64, 2000}) {
    absl::StatusOr<CrossEntropyOutput> cpu =
        LabelSmoothedCrossEntropy(NaNLogits(v), Targets<int32_t>(4, v, -1), options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_TRUE(std::isnan(cpu->loss.ToVector<float>()[0])) << "vocab " << v;
  }
}

// On the GPU the rows with a NaN have a NaN lse wherever it lies against
// the threads' shares (a share of NaN and -inf only once dropped it) and
// the packs, and the loss is NaN.
TEST(CrossEntropyTest, CudaNaNLogitsGiveNaNLse) {
  TFM_SKIP_WITHOUT_GPU();
  const CrossEntropyOptions options{.epsilon = 0.1f, .padding_index = -1};
  for (const DType dtype : {DType::kF32, DType::kBF16}) {
    for (const int64_t v : {8, 64, 2000}) {
      SCOPED_TRACE(::testing::Message() << DTypeName(dtype) << " vocab " << v);
      absl::StatusOr<CrossEntropyOutput> gpu =
          LabelSmoothedCrossEntropy(testing::OnCuda(testing::HostAs(NaNLogits(v), dtype)),
                                    testing::OnCuda(Targets<int32_t>(4, v, -1)), options);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_EQ(NaNRows(gpu->lse), (std::vector<bool>{true, true, true, false}));
      EXPECT_TRUE(std::isnan(testing::HostF32(gpu->loss).ToVector<float>()[0]));
    }
  }
}

TEST(CrossEntropyTest, CudaOutOfRangeTargetIsInvalidArgument) {
  TFM_SKIP_WITHOUT_GPU();
  const Tensor logits = testing::OnCuda(*RandomNormal({5, 4}, {8, 0, 0}, 0.0f, 1.0f));
  const Tensor targets = testing::OnCuda(*Tensor::FromVector<int32_t>({1, 0, 4, -2, 3}, {5}));
  absl::Status status = LabelSmoothedCrossEntropy(logits, targets, {.padding_index = -2}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("label_smoothed_cross_entropy: target 4 of row 2"),
            std::string::npos)
      << status;
  const Tensor lse = testing::OnCuda(*Tensor::Zeros({5}, DType::kF32));
  status = LabelSmoothedCrossEntropyBackward(logits, targets, lse, testing::OnCuda(Scalar(1.0f)),
                                             {.padding_index = 1})
               .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("target 4 of row 2"), std::string::npos) << status;
}

}  // namespace
}  // namespace tfm
