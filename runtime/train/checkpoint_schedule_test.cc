#include "runtime/train/checkpoint_schedule.h"

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(CheckpointScheduleTest, EveryNUpdates) {
  CheckpointSchedule schedule(/*every_updates=*/100, /*every_minutes=*/0);
  EXPECT_FALSE(schedule.Due(99, 1e6));
  EXPECT_TRUE(schedule.Due(100, 0));
  schedule.MarkSaved(100, 0);
  EXPECT_FALSE(schedule.Due(150, 0));
  EXPECT_TRUE(schedule.Due(200, 0));
}

TEST(CheckpointScheduleTest, EveryMMinutesOfTrainingTime) {
  CheckpointSchedule schedule(/*every_updates=*/0, /*every_minutes=*/10);
  EXPECT_FALSE(schedule.Due(5, 599.0));
  EXPECT_TRUE(schedule.Due(6, 600.0));
  schedule.MarkSaved(6, 600.0);
  EXPECT_FALSE(schedule.Due(7, 1100.0));
  EXPECT_TRUE(schedule.Due(8, 1200.0));
  EXPECT_FALSE(schedule.Due(6, 5000.0));  // No update since the save.
}

TEST(CheckpointScheduleTest, ResumedRunCountsFromItsCheckpoint) {
  config::TrainConfig train;
  train.set_checkpoint_every_steps(1000);
  train.set_checkpoint_every_minutes(0);
  const CheckpointSchedule schedule = CheckpointSchedule::FromConfig(train, 4000, 7200.0);
  EXPECT_FALSE(schedule.Due(4999, 9e9));
  EXPECT_TRUE(schedule.Due(5000, 7200.0));
}

TEST(CheckpointScheduleTest, BothTriggersOffNeverSaves) {
  const CheckpointSchedule schedule(0, 0);
  EXPECT_FALSE(schedule.Due(1000000, 1e9));
}

}  // namespace
}  // namespace tfm
