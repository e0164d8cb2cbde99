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

TEST(LossScalingTest, OffKeepsTheScaleAtOne) {
  LossScaling off;
  off.dynamic = false;
  off.window = 1;
  LossScaleState state = InitialLossScale(off);
  EXPECT_EQ(state.scale, 1.0);
  for (int i = 0; i < 5; ++i) state = AfterAppliedUpdate(off, state);
  EXPECT_EQ(state.scale, 1.0);
}

TEST(LossScalingTest, DoublesAfterACleanWindowAndHalvesOnOverflow) {
  LossScaling scaling;
  scaling.dynamic = true;
  scaling.initial_scale = 128;
  scaling.window = 3;
  LossScaleState state = InitialLossScale(scaling);
  EXPECT_EQ(state.scale, 128.0);
  state = AfterAppliedUpdate(scaling, state);
  state = AfterAppliedUpdate(scaling, state);
  EXPECT_EQ(state.scale, 128.0);  // Two clean updates of three.
  EXPECT_EQ(state.clean_updates, 2);

  // An overflow halves the scale and restarts the count.
  absl::StatusOr<LossScaleState> halved = AfterOverflow(scaling, state, 3);
  ASSERT_TRUE(halved.ok()) << halved.status();
  EXPECT_EQ(halved->scale, 64.0);
  EXPECT_EQ(halved->clean_updates, 0);

  state = *halved;
  for (int i = 0; i < 3; ++i) state = AfterAppliedUpdate(scaling, state);
  EXPECT_EQ(state.scale, 128.0);
  EXPECT_EQ(state.clean_updates, 0);
}

TEST(LossScalingTest, StopsGrowingAtTheMaximum) {
  LossScaling scaling;
  scaling.dynamic = true;
  scaling.window = 1;
  LossScaleState state{kMaxLossScale / 2, 0};
  state = AfterAppliedUpdate(scaling, state);
  EXPECT_EQ(state.scale, kMaxLossScale);
  state = AfterAppliedUpdate(scaling, state);
  EXPECT_EQ(state.scale, kMaxLossScale);
}

TEST(LossScalingTest, FallingBelowTheMinimumIsAnErrorNamingTheUpdate) {
  LossScaling scaling;
  scaling.dynamic = true;
  scaling.min_scale = 0.25;
  absl::StatusOr<LossScaleState> state = AfterOverflow(scaling, LossScaleState{0.5, 7}, 41);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->scale, 0.25);  // At the minimum is allowed.
  const absl::Status below = AfterOverflow(scaling, *state, 42).status();
  EXPECT_EQ(below.code(), absl::StatusCode::kInternal);
  EXPECT_NE(below.message().find("update 42"), std::string::npos) << below;
  EXPECT_NE(below.message().find("train.min_loss_scale 0.25"), std::string::npos) << below;
}

}  // namespace
}  // namespace tfm
