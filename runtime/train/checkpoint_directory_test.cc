#include "runtime/train/checkpoint_directory.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

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

// A checkpoint at `update` whose state records the validation there (loss,
// and a score unless NaN), or none (loss < 0).
Checkpoint Validated(int64_t update, double loss, double score, bool by_score) {
  Checkpoint checkpoint = SampleCheckpoint(update);
  if (loss >= 0) {
    checkpoint.state.set_valid_loss(loss);
    if (!std::isnan(score)) checkpoint.state.set_valid_score(score);
    checkpoint.state.set_ranked_by_score(by_score);
  }
  return checkpoint;
}

TEST(CheckpointDirectoryTest, BestChoosesByTheRunsMetricOldestFirst) {
  const std::string work_dir = FreshDirectory("best");
  // update: loss, BLEU. By BLEU the best three are 300, 500 and 200 (500
  // and 200 tie at 39: both, and before 600's 38); by loss 200, 300, 400.
  const struct {
    int64_t update;
    double loss, score;
  } runs[] = {{100, 3.0, 30}, {200, 2.5, 39}, {300, 2.6, 40}, {400, 2.7, 37},
              {500, 2.9, 39}, {600, 3.1, 38}, {700, -1, 0}};
  for (const auto& run : runs) {
    ASSERT_TRUE(WriteCheckpoint(work_dir, Validated(run.update, run.loss, run.score, true)).ok());
  }
  EXPECT_EQ(Updates(BestCheckpoints(work_dir, 3).value()), (std::vector<int64_t>{200, 300, 500}));
  // A tie at the cut goes to the newer: 500 before 200.
  EXPECT_EQ(Updates(BestCheckpoints(work_dir, 2).value()), (std::vector<int64_t>{300, 500}));

  // The newest validated checkpoint ranked by loss: the whole directory is
  // ranked by loss.
  ASSERT_TRUE(WriteCheckpoint(work_dir, Validated(800, 3.5, 10, false)).ok());
  EXPECT_EQ(Updates(BestCheckpoints(work_dir, 3).value()), (std::vector<int64_t>{200, 300, 400}));

  // 700 recorded no validation: 7 of the 8 can be chosen.
  const absl::Status too_many = BestCheckpoints(work_dir, 8).status();
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument) << too_many;
  EXPECT_THAT(too_many.message(), HasSubstr("7 of the 8"));
  EXPECT_THAT(too_many.message(), HasSubstr("train.keep_best_checkpoints"));
  EXPECT_FALSE(BestCheckpoints(work_dir, 0).ok());
  EXPECT_EQ(BestCheckpoints(FreshDirectory("none") + "/absent", 2).status().code(),
            absl::StatusCode::kNotFound);
}

// A state that does not parse: average --best names the file, the line and
// what was wrong; pruning treats it as unvalidated and goes on.
TEST(CheckpointDirectoryTest, AnUnreadableStateIsAnErrorWithItsLine) {
  const std::string work_dir = FreshDirectory("bad_state");
  for (int64_t update : {100, 200, 300}) {
    ASSERT_TRUE(WriteCheckpoint(work_dir, Validated(update, 3.0 - update / 1000.0, 30, true)).ok());
  }
  const std::string state = work_dir + "/checkpoint_000000200/state.pbtxt";
  {
    std::ofstream file(state, std::ios::app);
    file << "valid_los: 2.5\n";  // A misspelt field.
  }
  const absl::Status status = BestCheckpoints(work_dir, 2).status();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(state + ":"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("no field named \"valid_los\"")) << status;
  EXPECT_THAT(status.message(), HasSubstr("not a valid tfm.train.TrainingState text proto"));
  ASSERT_TRUE(PruneCheckpoints(work_dir, 1, 1).ok());
  // 100 is the best readable one of the older two.
  EXPECT_EQ(Updates(ListCheckpoints(work_dir).value()), (std::vector<int64_t>{100, 300}));
}

TEST(CheckpointDirectoryTest, ValidationRankIsHigherForBetter) {
  train::TrainingState state;
  EXPECT_FALSE(ValidationRank(state, false).has_value());
  state.set_valid_loss(2.5);
  EXPECT_EQ(ValidationRank(state, false), -2.5);
  EXPECT_FALSE(ValidationRank(state, true).has_value());  // No score recorded.
  state.set_valid_score(38.5);
  EXPECT_EQ(ValidationRank(state, true), 38.5);
  state.set_valid_loss(std::nan(""));
  EXPECT_FALSE(ValidationRank(state, false).has_value());
}

TEST(CheckpointDirectoryTest, PruneKeepsTheLastKAndTheBestByValidation) {
  const std::string work_dir = FreshDirectory("prune_best");
  // BLEU per update: the peak is early (200, 300), as on a small corpus.
  const double scores[] = {30, 41, 40, 35, 36, 33, 34, 32};
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(WriteCheckpoint(work_dir, Validated((i + 1) * 100, 3.0, scores[i], true)).ok());
  }
  ASSERT_TRUE(PruneCheckpoints(work_dir, 2, 3).ok());
  // The last 2 (700, 800), and the best 3 of the others (200, 300, 500).
  EXPECT_EQ(Updates(ListCheckpoints(work_dir).value()),
            (std::vector<int64_t>{200, 300, 500, 700, 800}));
  // Pruning again keeps them; the best 3 overall are all there.
  ASSERT_TRUE(PruneCheckpoints(work_dir, 2, 3).ok());
  EXPECT_EQ(ListCheckpoints(work_dir).value().size(), 5u);
  EXPECT_EQ(Updates(BestCheckpoints(work_dir, 3).value()), (std::vector<int64_t>{200, 300, 500}));
  // keep_best 0 is the plain rule.
  ASSERT_TRUE(PruneCheckpoints(work_dir, 2, 0).ok());
  EXPECT_EQ(Updates(ListCheckpoints(work_dir).value()), (std::vector<int64_t>{700, 800}));
  EXPECT_FALSE(PruneCheckpoints(work_dir, 2, -1).ok());
}

}  // namespace
}  // namespace tfm
