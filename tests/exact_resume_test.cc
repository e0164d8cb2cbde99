// Exact resume of the real model: the Transformer with dropout at every site
// trains N updates in one process, which ends (its checkpoint on disk, all
// else dropped); a second process resumes from the work directory, and at
// update 2N every weight, every Adam moment, the dropout counter and the data
// position equal those of one uninterrupted run, bit for bit. On a GPU the
// same in bf16 with train.deterministic (the fast kernels' float atomics
// would differ run to run), validation BLEU decoded on the GPU.
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "runtime/train/training_testing.h"
#include "tests/util/checkpoint_equality.h"
#include "tests/util/gpu.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

constexpr int kHalf = 12;  // N: updates before the interruption.

class ExactResumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/exact_resume";
    ASSERT_EQ(std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str()), 0);
    config::TaskConfig config;
    config.set_task("translation");
    *config.mutable_data() = testing::WriteToyCorpus(dir_);
    config::ModelConfig& model = *config.mutable_model();
    testing::SetTinyModelShape(model, 2, 2);
    // Every site nn.Transformer drops at: residual, attention, after the ReLU.
    model.set_dropout(0.1f);
    model.set_attention_dropout(0.1f);
    model.set_relu_dropout(0.1f);
    config::TrainConfig& train = *config.mutable_train();
    train.set_warmup_steps(4);
    train.set_update_freq(2);  // Gradient accumulation resumes mid-epoch too.
    train.set_log_every_steps(1);
    train.set_validate_every_steps(kHalf);
    train.set_validate_every_minutes(0);
    train.set_checkpoint_every_steps(kHalf);
    train.set_checkpoint_every_minutes(0);
    train.set_validate_bleu_sentences(3);
    std::string text;
    google::protobuf::TextFormat::PrintToString(config, &text);
    std::ofstream(dir_ + "/tiny.pbtxt") << text;
  }

  // One process training in work directory `name` up to update `steps`,
  // with `flags` (the device's).
  testing::CommandResult Train(const std::string& name, int steps) {
    return testing::RunCommand(absl::StrCat(testing::RunfilePath("tasks/translate_ende"),
                                            " train --config=", dir_, "/tiny.pbtxt --workdir=",
                                            dir_, "/", name, " --set=train.max_steps=", steps,
                                            flags_));
  }

  void ExpectResumedRunEqualsUninterruptedRun();

  std::string dir_;
  std::string flags_ = " --device=cpu";
};

TEST_F(ExactResumeTest, ResumedRunEqualsUninterruptedRunBitForBit) {
  ExpectResumedRunEqualsUninterruptedRun();
}

TEST_F(ExactResumeTest, OnTheGpuInBf16AndDeterministicMode) {
  TFM_SKIP_WITHOUT_GPU();
  flags_ = " --device=cuda --set=train.dtype=bf16 --set=train.deterministic=true";
  ExpectResumedRunEqualsUninterruptedRun();
}

void ExactResumeTest::ExpectResumedRunEqualsUninterruptedRun() {
  const testing::CommandResult first = Train("resumed", kHalf);
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const testing::CommandResult second = Train("resumed", 2 * kHalf);
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find(absl::StrCat("at update ", kHalf)), std::string::npos)
      << second.output;
  const testing::CommandResult straight = Train("straight", 2 * kHalf);
  ASSERT_EQ(straight.exit_code, 0) << straight.output;

  const Checkpoint resumed = testing::ReadCheckpointOrFail(dir_ + "/resumed", 2 * kHalf);
  const Checkpoint uninterrupted = testing::ReadCheckpointOrFail(dir_ + "/straight", 2 * kHalf);
  ASSERT_EQ(resumed.state.update(), 2 * kHalf);
  // The run moved: the dropout counter and the data position advanced past
  // the interruption, so equal states are not two untouched ones.
  const Checkpoint halfway = testing::ReadCheckpointOrFail(dir_ + "/straight", kHalf);
  EXPECT_GT(resumed.state.rng().offset(), halfway.state.rng().offset());
  EXPECT_GT(resumed.state.batches(), halfway.state.batches());
  testing::ExpectBitIdentical(uninterrupted, resumed);
}

}  // namespace
}  // namespace tfm
