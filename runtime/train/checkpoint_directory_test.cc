#include "runtime/train/checkpoint_directory.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;
using ::tfm::testing::FreshDirectory;
using ::tfm::testing::SampleCheckpoint;

std::vector<int64_t> Updates(const std::vector<CheckpointEntry>& entries) {
  std::vector<int64_t> updates;
  for (const CheckpointEntry& entry : entries) updates.push_back(entry.update);
  return updates;
}

TEST(CheckpointDirectoryTest, ListsCommittedCheckpointsByUpdate) {
  const std::string work_dir = FreshDirectory("list");
  for (int64_t update : {1000, 20, 300}) {
    ASSERT_TRUE(WriteCheckpoint(work_dir, SampleCheckpoint(update)).ok());
  }
  // An interrupted save (no MANIFEST) and unrelated files are not checkpoints.
  std::filesystem::create_directories(work_dir + "/checkpoint_000005000");
  std::filesystem::create_directories(work_dir + "/checkpoint_latest_notes");
  EXPECT_EQ(Updates(ListCheckpoints(work_dir).value()), (std::vector<int64_t>{20, 300, 1000}));
  EXPECT_EQ(LatestCheckpoint(work_dir).value().path, work_dir + "/checkpoint_000001000");
  EXPECT_EQ(Updates(LastCheckpoints(work_dir, 2).value()), (std::vector<int64_t>{300, 1000}));

  absl::Status too_many = LastCheckpoints(work_dir, 5).status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(too_many.message(), HasSubstr("has only 3"));
}

TEST(CheckpointDirectoryTest, EmptyOrMissingDirectoryHasNoLatest) {
  EXPECT_TRUE(ListCheckpoints(FreshDirectory("none") + "/absent").value().empty());
  // average's message for a work directory that is not there says so.
  const absl::Status absent = LastCheckpoints(FreshDirectory("none") + "/absent", 2).status();
  EXPECT_EQ(absent.code(), absl::StatusCode::kNotFound) << absent;
  EXPECT_THAT(absent.message(), HasSubstr("/absent: no such work directory"));
  EXPECT_EQ(LatestCheckpoint(FreshDirectory("empty")).status().code(), absl::StatusCode::kNotFound);
}

TEST(CheckpointDirectoryTest, PruneKeepsTheLastKAndCleansCrashedSaves) {
  const std::string work_dir = FreshDirectory("prune");
  for (int64_t update = 1; update <= 5; ++update) {
    ASSERT_TRUE(WriteCheckpoint(work_dir, SampleCheckpoint(update * 10)).ok());
  }
  // A save by a process that no longer exists (pids never reach 10^9), and
  // one by a live process (this one) that may still be writing.
  const std::string crashed = work_dir + "/.checkpoint_000000060.tmp.999999999";
  const std::string live = absl::StrCat(work_dir, "/.checkpoint_000000070.tmp.", getpid());
  std::filesystem::create_directories(crashed);
  std::filesystem::create_directories(live);

  ASSERT_TRUE(PruneCheckpoints(work_dir, 2).ok());
  EXPECT_EQ(Updates(ListCheckpoints(work_dir).value()), (std::vector<int64_t>{40, 50}));
  EXPECT_FALSE(std::filesystem::exists(crashed));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_FALSE(PruneCheckpoints(work_dir, 0).ok());
}

}  // namespace
}  // namespace tfm
