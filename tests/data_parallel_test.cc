// Data-parallel training end to end: the translation task's binary under
// mpirun with 2 CPU ranks against the same binary alone, on a toy corpus and
// a tiny Transformer.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/training_testing.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using Result = testing::CommandResult;
using testing::RunCommand;

// mpirun for a test: root is allowed (containers and CI run as root), more
// ranks than cores are allowed, and processes are not bound to cores (a
// rank bound to one core would run its thread pool on it alone). The ranks
// talk over shared memory (vader) without single-copy through
// process_vm_readv, which containers often forbid.
std::string Mpirun(int ranks) {
  return absl::StrCat(
      "mpirun --allow-run-as-root --oversubscribe --bind-to none -np ", ranks,
      " --mca btl self,vader --mca btl_vader_single_copy_mechanism none ");
}

class DataParallelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/data_parallel");
    ASSERT_EQ(system(("rm -rf " + *dir_ + " && mkdir -p " + *dir_).c_str()), 0);
    config::TaskConfig config;
    config.set_task("translation");
    *config.mutable_data() = testing::WriteToyCorpus(*dir_);
    config::ModelConfig& model = *config.mutable_model();
    testing::SetTinyModelShape(model, 1, 2);
    config::TrainConfig& train = *config.mutable_train();
    // CPU ranks whatever the machine ("auto" would give each rank a GPU).
    train.set_device("cpu");
    train.set_warmup_steps(4);
    train.set_update_freq(2);
    train.set_log_every_steps(5);
    train.set_validate_every_steps(10);
    train.set_checkpoint_every_steps(10);
    train.set_checkpoint_every_minutes(0);
    train.set_validate_bleu_sentences(3);
    std::string text;
    google::protobuf::TextFormat::PrintToString(config, &text);
    std::ofstream(*dir_ + "/tiny.pbtxt") << text;
  }

  // `ranks` processes (0: the binary alone, without mpirun) training to
  // update `steps` in work directory `name`.
  Result Train(int ranks, const std::string& name, int steps, const std::string& extra = "") {
    return RunCommand(absl::StrCat(ranks > 0 ? Mpirun(ranks) : "", testing::RunfilePath("tasks/translate_ende"),
                            " train --config=", *dir_, "/tiny.pbtxt --workdir=", *dir_, "/", name,
                            " --set=train.max_steps=", steps, " ", extra));
  }

  Checkpoint Read(const std::string& name, int update) {
    const absl::StatusOr<Checkpoint> checkpoint =
        ReadCheckpoint(absl::StrCat(*dir_, "/", name, "/checkpoint_", absl::Dec(update, absl::kZeroPad9)));
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
    return checkpoint.ok() ? *checkpoint : Checkpoint();
  }

  // Every weight and Adam moment of `b` equal to `a`'s, bit for bit: the
  // ranks' gradients are summed in rank order, as one process sums its
  // batches in turn.
  void ExpectSameModel(const Checkpoint& a, const Checkpoint& b) {
    ASSERT_EQ(a.model.size(), b.model.size());
    ASSERT_FALSE(a.model.empty());
    for (auto [x, y] : {std::make_pair(&a.model, &b.model), std::make_pair(&a.optimizer, &b.optimizer)}) {
      for (size_t i = 0; i < x->size(); ++i) {
        const std::vector<float> u = (*x)[i].second.ToVector<float>();
        const std::vector<float> v = (*y)[i].second.ToVector<float>();
        ASSERT_EQ(u.size(), v.size());
        float largest = 1e-30f, worst = 0;
        for (size_t j = 0; j < u.size(); ++j) {
          largest = std::max(largest, std::abs(u[j]));
          worst = std::max(worst, std::abs(u[j] - v[j]));
        }
        EXPECT_EQ(worst, 0.0f) << (*x)[i].first << " (largest " << largest << ")";
      }
    }
    EXPECT_EQ(a.state.batches(), b.state.batches());
    EXPECT_EQ(a.state.data_position().DebugString(), b.state.data_position().DebugString());
  }

  static std::string* dir_;
};

std::string* DataParallelTest::dir_ = nullptr;

TEST_F(DataParallelTest, TwoRanksWithOneBatchEachEqualOneProcessWithBoth) {
  const Result alone = Train(0, "alone", 20);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const Result ranks = Train(2, "two_ranks", 20);
  ASSERT_EQ(ranks.exit_code, 0) << ranks.output;
  EXPECT_NE(ranks.output.find("ranks: 2 (Open MPI"), std::string::npos) << ranks.output;
  // Rank 0 alone logs: one line per log step, not two.
  EXPECT_EQ(ranks.output.find("update 20/20"), ranks.output.rfind("update 20/20")) << ranks.output;
  ExpectSameModel(Read("alone", 20), Read("two_ranks", 20));
}

TEST_F(DataParallelTest, ThreeRanksEqualOneProcessWithUpdateFreqThree) {
  const std::string three = "--set=train.update_freq=3";
  const Result alone = Train(0, "alone3", 10, three);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const Result ranks = Train(3, "three_ranks", 10, three);
  ASSERT_EQ(ranks.exit_code, 0) << ranks.output;
  EXPECT_NE(ranks.output.find("ranks: 3 (Open MPI"), std::string::npos) << ranks.output;
  ExpectSameModel(Read("alone3", 10), Read("three_ranks", 10));
}

TEST_F(DataParallelTest, ATwoRankRunResumesOnOneRankWhereItStopped) {
  const Result first = Train(2, "resumed", 10);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const Result second = Train(0, "resumed", 20);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("at update 10"), std::string::npos) << second.output;
  const Result straight = Train(0, "straight", 20);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  ExpectSameModel(Read("straight", 20), Read("resumed", 20));
}

// Rank 1 stops itself (SIGSTOP: hung) or is killed (SIGKILL: dead) two
// seconds into a long run; the job must end with an error naming rank 1
// well within a minute, whatever rank 1 was doing.
TEST_F(DataParallelTest, AHungRankStopsTheOthersWithAnErrorNamingIt) {
  const std::string rank_one_stops =
      "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (sleep 2; kill -STOP $$) & fi; exec \"$0\" \"$@\"' ";
  const Result result = RunCommand(absl::StrCat(
      Mpirun(2), rank_one_stops, testing::RunfilePath("tasks/translate_ende"), " train --config=",
      *dir_, "/tiny.pbtxt --workdir=", *dir_, "/hung --set=train.max_steps=100000000",
      " --set=train.distributed_timeout_seconds=3"));
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("rank 0: "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("rank 1 (pid "), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("did not complete within 3s"), std::string::npos) << result.output;
  EXPECT_LT(result.took, absl::Seconds(60)) << result.output;
}

TEST_F(DataParallelTest, ADeadRankEndsTheJobNamingIt) {
  const std::string rank_one_dies =
      "sh -c 'if [ \"$OMPI_COMM_WORLD_RANK\" = 1 ]; then (sleep 2; kill -KILL $$) & fi; exec \"$0\" \"$@\"' ";
  const Result result = RunCommand(absl::StrCat(
      Mpirun(2), rank_one_dies, testing::RunfilePath("tasks/translate_ende"), " train --config=",
      *dir_, "/tiny.pbtxt --workdir=", *dir_, "/dead --set=train.max_steps=100000000",
      " --set=train.distributed_timeout_seconds=3"));
  EXPECT_NE(result.exit_code, 0) << result.output;
  // mpirun sees the process die and ends the job; what it prints names the rank.
  EXPECT_NE(result.output.find("rank 1"), std::string::npos) << result.output;
  EXPECT_LT(result.took, absl::Seconds(60)) << result.output;
}

}  // namespace
}  // namespace tfm
