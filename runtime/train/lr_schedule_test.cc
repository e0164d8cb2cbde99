#include "runtime/train/lr_schedule.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(InverseSqrtScheduleTest, FollowsThePaper) {
  const InverseSqrtSchedule schedule = *InverseSqrtSchedule::Create(512, 4000);
  EXPECT_EQ(schedule.LearningRate(0), 0.0);
  EXPECT_DOUBLE_EQ(schedule.LearningRate(1), std::pow(512.0, -0.5) * std::pow(4000.0, -1.5));
  // Linear during warmup, peak at warmup, inverse square root after.
  EXPECT_DOUBLE_EQ(schedule.LearningRate(2000), schedule.LearningRate(1) * 2000);
  EXPECT_NEAR(schedule.LearningRate(4000), 6.9877e-4, 1e-7);
  EXPECT_LT(schedule.LearningRate(3999), schedule.LearningRate(4000));
  EXPECT_LT(schedule.LearningRate(4001), schedule.LearningRate(4000));
  EXPECT_DOUBLE_EQ(schedule.LearningRate(16000), schedule.LearningRate(4000) / 2);
  const InverseSqrtSchedule scaled = *InverseSqrtSchedule::Create(512, 4000, 2.0);
  EXPECT_DOUBLE_EQ(scaled.LearningRate(100000), 2 * schedule.LearningRate(100000));
}

TEST(InverseSqrtScheduleTest, RejectsBadSettings) {
  EXPECT_EQ(InverseSqrtSchedule::Create(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(InverseSqrtSchedule::Create(512, 0).ok());
  EXPECT_FALSE(InverseSqrtSchedule::Create(512, 4000, -1.0).ok());
}

TEST(CooldownFactorTest, OneUntilTheLastFractionThenLinearToZero) {
  EXPECT_EQ(CooldownFactor(0.0, 0.99), 1.0);  // No cooldown.
  EXPECT_EQ(CooldownFactor(0.25, 0.0), 1.0);
  EXPECT_EQ(CooldownFactor(0.25, 0.75), 1.0);
  EXPECT_DOUBLE_EQ(CooldownFactor(0.25, 0.875), 0.5);
  EXPECT_DOUBLE_EQ(CooldownFactor(0.25, 0.8125), 0.75);
  EXPECT_EQ(CooldownFactor(0.25, 1.0), 0.0);
  EXPECT_EQ(CooldownFactor(0.25, 1.5), 0.0);  // A run past its budget.
}

}  // namespace
}  // namespace tfm
