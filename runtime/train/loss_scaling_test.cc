#include "runtime/train/loss_scaling.h"

#include <string>

#include "gtest/gtest.h"

namespace tfm {
namespace {

config::TrainConfig WithMode(const std::string& mode) {
  config::TrainConfig train;
  train.set_loss_scaling(mode);
  return train;
}

TEST(LossScalingTest, AutoScalesF16OnlyAndDynamicOrOffOverrideIt) {
  EXPECT_TRUE(LossScalingFromConfig(WithMode("auto"), DType::kF16).dynamic);
  EXPECT_FALSE(LossScalingFromConfig(WithMode("auto"), DType::kBF16).dynamic);
  EXPECT_FALSE(LossScalingFromConfig(WithMode("auto"), DType::kF32).dynamic);
  EXPECT_TRUE(LossScalingFromConfig(WithMode("dynamic"), DType::kF32).dynamic);
  EXPECT_FALSE(LossScalingFromConfig(WithMode("off"), DType::kF16).dynamic);

  // The config's defaults are fairseq's (and PyTorch's window).
  const LossScaling defaults = LossScalingFromConfig(config::TrainConfig(), DType::kF16);
  EXPECT_EQ(defaults.initial_scale, 128.0);
  EXPECT_EQ(defaults.window, 2000);
  EXPECT_DOUBLE_EQ(defaults.min_scale, 1e-4);
}

// The rule itself is ops/loss_scale's (StepLossScale), tested there.
TEST(LossScalingTest, InitialScaleIsOneWhenOff) {
  LossScaling scaling;
  scaling.dynamic = false;
  EXPECT_EQ(InitialLossScale(scaling).scale, 1.0);
  scaling.dynamic = true;
  scaling.initial_scale = 512;
  EXPECT_EQ(InitialLossScale(scaling).scale, 512.0);
  EXPECT_EQ(InitialLossScale(scaling).clean_updates, 0);
}

TEST(LossScalingTest, FallingBelowTheMinimumIsAnErrorNamingTheUpdate) {
  LossScaling scaling;
  scaling.dynamic = true;
  scaling.min_scale = 0.25;
  EXPECT_TRUE(CheckAboveMinimum(scaling, LossScaleState{0.25, 0}, 41).ok());  // At it: allowed.
  const absl::Status below = CheckAboveMinimum(scaling, LossScaleState{0.125, 0}, 42);
  EXPECT_EQ(below.code(), absl::StatusCode::kInternal);
  EXPECT_NE(below.message().find("update 42"), std::string::npos) << below;
  EXPECT_NE(below.message().find("at loss scale 0.25"), std::string::npos) << below;
  EXPECT_NE(below.message().find("train.min_loss_scale 0.25"), std::string::npos) << below;
}

}  // namespace
}  // namespace tfm
