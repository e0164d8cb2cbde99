// Where training runs: train.device and --device resolve on this machine,
// and a GPU that is not here stops `train` at once, with an error that says
// so and nothing written (no vocabulary trained, no work directory).
#include <sys/stat.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/config/device_setting.h"
#include "core/cuda/runtime.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/run_command.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

TEST(DeviceSettingTest, AutoTakesTheFirstGpuElseTheCpu) {
  absl::StatusOr<Device> device = ResolveDevice("auto");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ(*device, cuda::DeviceCount() > 0 ? Device::Cuda(0) : Device::Cpu());
  EXPECT_EQ(*ResolveDevice("AUTO"), *device);
  EXPECT_EQ(*ResolveDevice("cpu"), Device::Cpu());
}

TEST(DeviceSettingTest, BadNamesListTheChoices) {
  EXPECT_TRUE(CheckDeviceSyntax("cuda:1").ok());
  EXPECT_TRUE(CheckDeviceSyntax("auto").ok());
  const absl::Status bad = CheckDeviceSyntax("gpu");
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("expected auto, cpu, cuda or cuda:N"));
  EXPECT_EQ(ResolveDevice("gpu").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DeviceSettingTest, AMissingGpuSaysWhichThereAre) {
  const std::string missing = absl::StrCat("cuda:", cuda::DeviceCount());
  const absl::Status status = ResolveDevice(missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr(absl::StrCat(missing, " but this ")));
}

testing::CommandResult RunTaskBinary(const std::string& arguments) {
  return testing::RunCommand(
      absl::StrCat(testing::RunfilePath("tasks/translate_ende"), " ", arguments), 120);
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

TEST(DeviceSettingTest, TrainOnAMissingGpuFailsBeforeWritingAnything) {
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "this machine has a GPU: --device=cuda trains";
  const std::string work_dir = absl::StrCat(::testing::TempDir(), "/no_gpu_run");
  for (const char* command : {"train", "run"}) {
    const testing::CommandResult result =
        RunTaskBinary(absl::StrCat(command, " --device=cuda --minutes=1 --workdir=", work_dir));
    EXPECT_NE(result.exit_code, 0) << command << ":\n" << result.output;
    // Named as typed: the flag, not a --set the user never wrote.
    EXPECT_THAT(result.output, HasSubstr("--device=cuda: train.device: cuda:0 but this "))
        << command;
    EXPECT_THAT(result.output, ::testing::Not(HasSubstr("--set="))) << command;
    EXPECT_THAT(result.output,
                HasSubstr(cuda::BuiltWithCuda() ? "has no GPU" : "built without CUDA"))
        << command;
    EXPECT_FALSE(Exists(work_dir)) << command << " left " << work_dir << " behind";
  }
}

// Decoding commands resolve --device before reading anything: no model,
// no input, just the error naming the flag.
TEST(DeviceSettingTest, TranslateOnAMissingGpuFailsAtOnce) {
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  const testing::CommandResult result = RunTaskBinary(
      "translate --device=cuda --model=/no/such/model --input=/no/such/input");
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--device=cuda: cuda:0 but this "));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("/no/such")));
}

// --device sets train.device over the config file and --set.
TEST(DeviceSettingTest, TheFlagWinsOverTheConfig) {
  const testing::CommandResult result = RunTaskBinary("validate --set=train.device=cuda:3 --device=cpu");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("device: \"cpu\""));
  // And decode.device: the main job decodes where it trained.
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("device: \"auto\"")));
  EXPECT_THAT(result.output, ::testing::Not(HasSubstr("cuda:3")));
}

}  // namespace
}  // namespace tfm
