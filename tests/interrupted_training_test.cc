// SIGINT or SIGTERM during `train`: the run stops between updates, writes a
// checkpoint that resumes, says so, and exits with 128 + the signal (the
// shell's convention), so that a script's `train && evaluate` does not go on
// with an unfinished run as if it had completed.
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/train/training_testing.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

class InterruptedTrainingTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/interrupted_" + std::to_string(GetParam());
    ASSERT_EQ(std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str()), 0);
    config::TaskConfig config;
    config.set_task("translation");
    *config.mutable_data() = testing::WriteToyCorpus(dir_);
    testing::SetTinyModelShape(*config.mutable_model(), 1, 2);
    config::TrainConfig& train = *config.mutable_train();
    train.set_log_every_steps(1);
    train.set_max_steps(1000000);  // Only the signal ends it.
    train.set_validate_every_steps(0);
    train.set_checkpoint_every_minutes(0);
    train.set_checkpoint_every_steps(0);
    train.set_average_last_checkpoints(1);
    std::string text;
    google::protobuf::TextFormat::PrintToString(config, &text);
    std::ofstream(dir_ + "/tiny.pbtxt") << text;
  }

  std::string dir_;
};

TEST_P(InterruptedTrainingTest, WritesACheckpointAndExitsWith128PlusTheSignal) {
  const int signal = GetParam();
  const std::string log = dir_ + "/train.log", work = dir_ + "/work";
  // Started in the background; the signal goes once updates are logged
  // (so the handler is installed), and the shell prints the exit status.
  const std::string script = dir_ + "/interrupt.sh";
  std::ofstream(script) << testing::RunfilePath("tasks/translate_ende")
                        << " train --device=cpu --config=" << dir_ << "/tiny.pbtxt --workdir="
                        << work << " >" << log << " 2>&1 &\n"
                        << "pid=$!\n"
                        << "for i in $(seq 1 1200); do\n"
                        << "  grep -q '| update 3/' " << log << " && break\n"
                        << "  sleep 0.1\n"
                        << "done\n"
                        << "kill -" << signal << " $pid\n"
                        << "wait $pid\n"
                        << "echo \"exit status $?\"\n"
                        << "cat " << log << "\n";
  const testing::CommandResult result = testing::RunCommand("sh " + script, 240);
  EXPECT_THAT(result.output, HasSubstr(absl::StrCat("exit status ", 128 + signal)))
      << result.output;
  EXPECT_THAT(result.output, HasSubstr("stopped: training stopped by a signal at update"))
      << result.output;
  EXPECT_THAT(result.output, HasSubstr("run the same command to resume")) << result.output;
  // Its checkpoint resumes: a second run goes on from it to a fixed end.
  const testing::CommandResult resumed = testing::RunCommand(
      absl::StrCat(testing::RunfilePath("tasks/translate_ende"), " train --device=cpu --config=",
                   dir_, "/tiny.pbtxt --workdir=", work, " --set=train.max_steps=1000000 "
                   "--minutes=0.02"),
      240);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_THAT(resumed.output, HasSubstr("resuming from " + work + "/checkpoint_"))
      << resumed.output;
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, InterruptedTrainingTest,
                         ::testing::Values(SIGINT, SIGTERM));

}  // namespace
}  // namespace tfm
