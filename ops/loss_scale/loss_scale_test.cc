#include "ops/loss_scale/loss_scale.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

Tensor Scalar(float value) { return *Tensor::FromVector<float>({value}, Shape()); }

float Value(const Tensor& scalar) { return testing::HostF32(scalar).data<float>()[0]; }

// Steps `state` after each of `sums` on `device`; the scales and counts
// after each step.
std::vector<std::pair<float, float>> Steps(const Device& device, float scale,
                                           const std::vector<float>& sums, int64_t window,
                                           double max_scale) {
  const auto on = [&](const Tensor& t) { return device.is_cuda() ? testing::OnCuda(t) : t; };
  LossScaleTensors state{on(Scalar(scale)), on(Scalar(0.0f))};
  std::vector<std::pair<float, float>> seen;
  for (const float sum : sums) {
    const Tensor scale_before = state.scale;
    const float before = Value(scale_before);
    absl::StatusOr<LossScaleTensors> next = LossScaleStep(state, on(Scalar(sum)), window, max_scale);
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok()) return seen;
    EXPECT_EQ(Value(scale_before), before) << "the input state changed";
    state = *next;
    seen.emplace_back(Value(state.scale), Value(state.clean_updates));
  }
  return seen;
}

using Trajectory = std::vector<std::pair<float, float>>;

// The rule: doubles after `window` finite updates in a row, halves (and
// restarts the count) after a non-finite one, whatever made it so.
TEST(LossScaleTest, DoublesAfterACleanWindowAndHalvesOnOverflow) {
  const float kInf = INFINITY, kNan = NAN;
  const Trajectory seen = Steps(Device::Cpu(), 128, {1, 2, 3, kInf, 1, 1, 1, kNan, -kInf}, 3, 1e6);
  const Trajectory expected = {{128, 1}, {128, 2}, {256, 0}, {128, 0}, {128, 1},
                               {128, 2}, {256, 0}, {128, 0}, {64, 0}};
  EXPECT_EQ(seen, expected);
}

TEST(LossScaleTest, StopsGrowingAtTheMaximum) {
  const double max = 18446744073709551616.0;  // 2^64, the trainer's.
  const float half = static_cast<float>(max / 2);
  const Trajectory seen = Steps(Device::Cpu(), half, {1, 1, 1}, 1, max);
  const float top = static_cast<float>(max);
  EXPECT_EQ(seen, (Trajectory{{top, 0}, {top, 1}, {top, 2}}));
}

TEST(LossScaleTest, ScaleByMultipliesEveryTensorByTheScaleOrItsReciprocal) {
  std::vector<Tensor> tensors = {*Tensor::FromVector<float>({1.5f, -3.0f, 7e-3f}, {3}),
                                 *Tensor::Zeros({0}, DType::kF32),
                                 *Tensor::FromVector<float>(std::vector<float>(40000, 0.3f),
                                                            {200, 200})};
  const std::vector<std::vector<float>> before = {tensors[0].ToVector<float>(), {},
                                                  tensors[2].ToVector<float>()};
  ASSERT_TRUE(MultiTensorScaleBy(tensors, Scalar(1024.0f), /*reciprocal=*/false).ok());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const std::vector<float> now = tensors[t].ToVector<float>();
    for (size_t i = 0; i < now.size(); ++i) EXPECT_EQ(now[i], before[t][i] * 1024.0f);
  }
  ASSERT_TRUE(MultiTensorScaleBy(tensors, Scalar(1024.0f), /*reciprocal=*/true).ok());
  for (size_t t = 0; t < tensors.size(); ++t) EXPECT_EQ(tensors[t].ToVector<float>(), before[t]);
  // A scale that is not a power of two rounds once per element.
  ASSERT_TRUE(MultiTensorScaleBy({tensors[0]}, Scalar(3.0f), /*reciprocal=*/true).ok());
  EXPECT_EQ(tensors[0].ToVector<float>()[0], 1.5f * (1.0f / 3.0f));
  EXPECT_TRUE(MultiTensorScaleBy({}, Scalar(2.0f), false).ok());
}

TEST(LossScaleTest, BadArgumentsAreErrors) {
  const Tensor x = *Tensor::Zeros({3}, DType::kF32);
  const absl::Status vector_scale = MultiTensorScaleBy({x}, x, false);
  EXPECT_NE(std::string(vector_scale.message()).find("scale must be an f32 scalar"),
            std::string::npos)
      << vector_scale;
  const LossScaleTensors state{Scalar(2), Scalar(0)};
  EXPECT_NE(std::string(LossScaleStep(state, Scalar(1), 0, 8).status().message())
                .find("window 0 must be >= 1"),
            std::string::npos);
  EXPECT_NE(std::string(LossScaleStep(state, x, 1, 8).status().message())
                .find("grad_sum_of_squares must be an f32 scalar"),
            std::string::npos);
}

TEST(LossScaleTest, CudaMatchesTheCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const float kInf = INFINITY;
  const std::vector<float> sums = {1, 2, kInf, 1, 1, NAN, 1, 1, 1, 1};
  EXPECT_EQ(Steps(Device::Cuda(0), 64, sums, 2, 256), Steps(Device::Cpu(), 64, sums, 2, 256));

  std::vector<Tensor> cpu = {*Tensor::FromVector<float>({1.5f, -3.0f, 7e-3f}, {3}),
                             *Tensor::FromVector<float>(std::vector<float>(70001, 0.3f), {70001})};
  std::vector<Tensor> gpu;
  for (const Tensor& t : cpu) gpu.push_back(testing::OnCuda(t));
  for (const bool reciprocal : {false, true}) {
    ASSERT_TRUE(MultiTensorScaleBy(cpu, Scalar(3.0f), reciprocal).ok());
    ASSERT_TRUE(MultiTensorScaleBy(gpu, testing::OnCuda(Scalar(3.0f)), reciprocal).ok());
  }
  for (size_t t = 0; t < cpu.size(); ++t) {
    EXPECT_EQ(testing::HostF32(gpu[t]).ToVector<float>(), cpu[t].ToVector<float>());
  }
}

}  // namespace
}  // namespace tfm
