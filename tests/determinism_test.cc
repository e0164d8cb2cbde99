// Determinism of training on the CPU: the Multi30k small preset's model
// (3+3 layers, d_model 256, dropout 0.2) trains 100 updates twice on 2
// threads and once on 1; every logged loss, every weight, every Adam moment
// and the trainer's position come out bit for bit the same (the CPU kernels
// cut their reductions by the data's shape, never by the thread count). The
// batches are smaller than the preset's (256 target tokens) so the test
// stays short; the model, the data and the code path are the preset's.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/util/checkpoint_equality.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"

namespace tfm {
namespace {

constexpr int kUpdates = 100;

// Trains the preset in `work_dir` with `threads` compute threads.
testing::CommandResult Train(const std::string& work_dir, int threads) {
  return testing::RunCommand(
      absl::StrCat("env TFM_NUM_THREADS=", threads, " ", testing::RunfilePath("tasks/translate_ende"),
                   " train --config=multi30k_ende_small --data=",
                   testing::SharedDataPath("multi30k"), " --workdir=", work_dir,
                   " --set=train.max_steps=", kUpdates,
                   " --set=data.batching.max_source_tokens=256",
                   " --set=data.batching.max_target_tokens=256 --set=train.log_every_steps=1",
                   " --set=train.validate_every_minutes=0 --set=train.checkpoint_every_minutes=0",
                   " --set=train.checkpoint_every_steps=", kUpdates),
      /*timeout_seconds=*/600);
}

// The loss column of metrics.csv, one entry per update, as written.
std::vector<std::string> Losses(const std::string& work_dir) {
  std::ifstream in(work_dir + "/metrics.csv");
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = absl::StrSplit(line, ',');
  size_t column = 0;
  while (column < header.size() && header[column] != "loss") ++column;
  EXPECT_LT(column, header.size()) << work_dir << "/metrics.csv has no loss column";
  std::vector<std::string> losses;
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = absl::StrSplit(line, ',');
    if (column < fields.size() && !fields[column].empty()) losses.push_back(fields[column]);
  }
  return losses;
}

TEST(DeterminismTest, RunAfterRunAndThreadCountGiveTheSameBits) {
  const std::string dir = ::testing::TempDir() + "/determinism";
  struct Run {
    std::string name;
    int threads;
  };
  const std::vector<Run> runs = {{"first", 2}, {"second", 2}, {"one_thread", 1}};
  for (const Run& run : runs) {
    const testing::CommandResult result = Train(absl::StrCat(dir, "/", run.name), run.threads);
    ASSERT_EQ(result.exit_code, 0) << run.name << ":\n" << result.output;
  }
  const std::string reference = dir + "/first";
  const std::vector<std::string> losses = Losses(reference);
  ASSERT_EQ(losses.size(), kUpdates);
  const Checkpoint expected = testing::ReadCheckpointOrFail(reference, kUpdates);
  for (size_t i = 1; i < runs.size(); ++i) {
    SCOPED_TRACE(runs[i].name);
    const std::string work_dir = absl::StrCat(dir, "/", runs[i].name);
    EXPECT_EQ(Losses(work_dir), losses);
    testing::ExpectBitIdentical(expected, testing::ReadCheckpointOrFail(work_dir, kUpdates));
  }
}

}  // namespace
}  // namespace tfm
