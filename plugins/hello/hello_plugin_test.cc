// The hello plugin in the engine (written by tools/new_plugin.sh): it
// loads, registers its task, reads its settings from the preset and names
// a missing one. Add a test for each command you write.
#include <sstream>
#include <string>
#include <vector>

#include "tasks/driver/driver.h"
#include "core/plugin_loader.h"
#include "core/task_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/preset_files.h"

namespace hello {
namespace {

using ::testing::HasSubstr;

absl::Status Validate(const std::string& config, std::string* out) {
  tfm::DriverOptions options;
  options.config = config;
  options.mode = "validate";
  std::ostringstream log;
  const absl::Status status = tfm::RunDriver(options, log);
  *out = log.str();
  return status;
}

TEST(HelloPluginTest, LoadsAndReadsItsSettings) {
  absl::StatusOr<tfm::LoadedPlugin> plugin =
      tfm::LoadEnginePlugin(tfm::testing::RunfilePath("plugins/hello/libhello_plugin.so"));
  ASSERT_TRUE(plugin.ok()) << plugin.status();
  EXPECT_TRUE(tfm::TaskRegistry().Contains("hello"));

  std::string out;
  const absl::Status valid =
      Validate(tfm::testing::RunfilePath("plugins/hello/configs/hello.pbtxt"), &out);
  EXPECT_TRUE(valid.ok()) << valid;
  EXPECT_THAT(out, HasSubstr("examples: 1000"));
  // Every preset beside the plugin, found on disk.
  const std::vector<std::string> presets = tfm::testing::PresetFiles("plugins/hello/configs");
  EXPECT_FALSE(presets.empty());
  for (const std::string& preset : presets) {
    const absl::Status status = Validate(tfm::testing::RunfilePath(preset), &out);
    EXPECT_TRUE(status.ok()) << preset << ": " << status;
  }

  const std::string missing = tfm::testing::WriteTempFile("missing.pbtxt", "task: \"hello\"\n");
  const absl::Status status = Validate(missing, &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("hello.HelloConfig"));
}

}  // namespace
}  // namespace hello
