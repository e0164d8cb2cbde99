// Every task's presets (tasks/*/configs/*.pbtxt, found on disk, so a new
// preset is checked without being listed here) parse and validate, and the
// paper's presets hold the paper's settings.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "core/config/config_loader.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/preset_files.h"

namespace tfm {
namespace {

// Runfile-relative paths of every task's presets, sorted.
std::vector<std::string> FindPresets() {
  const std::filesystem::path tasks = testing::RunfilePath("tasks");
  std::vector<std::string> presets;
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    const std::vector<std::string> own =
        testing::PresetFiles("tasks/" + task.path().filename().string() + "/configs");
    presets.insert(presets.end(), own.begin(), own.end());
  }
  std::sort(presets.begin(), presets.end());
  return presets;
}

// The preset, loaded and validated; a failure is the test's, naming it.
LoadedConfig LoadPreset(const std::string& preset) {
  absl::StatusOr<LoadedConfig> loaded = LoadTaskConfig(testing::RunfilePath(preset), {});
  EXPECT_TRUE(loaded.ok()) << preset << ": " << loaded.status();
  return loaded.ok() ? *std::move(loaded) : LoadedConfig{};
}

TEST(PresetsTest, EveryPresetParsesAndValidates) {
  const std::vector<std::string> presets = FindPresets();
  // The search must see the presets the README names, or it checks nothing.
  for (const std::string expected :
       {"tasks/translation/configs/ende_base.pbtxt", "tasks/translation/configs/ende_gettext.pbtxt",
        "tasks/translation/configs/multi30k_ende_small.pbtxt",
        "tasks/translation/configs/multi30k_ende_gpu.pbtxt",
        "tasks/parsing/configs/wsj_parsing.pbtxt", "tasks/parsing/configs/wsj_sample_cpu.pbtxt"}) {
    EXPECT_NE(std::find(presets.begin(), presets.end(), expected), presets.end())
        << expected << " not found under " << testing::RunfilePath("tasks");
  }
  for (const std::string& preset : presets) LoadPreset(preset);
}

TEST(PresetsTest, PresetsHoldThePapersSettings) {
  const LoadedConfig base = LoadPreset("tasks/translation/configs/ende_base.pbtxt");
  const config::TaskConfig& c = base.config;
  EXPECT_EQ(c.model().d_model(), 512);
  EXPECT_EQ(c.model().num_heads(), 8);
  EXPECT_FLOAT_EQ(c.model().dropout(), 0.1f);
  EXPECT_FLOAT_EQ(c.train().adam().beta2(), 0.98f);
  EXPECT_FLOAT_EQ(c.train().adam().epsilon(), 1e-9f);
  EXPECT_EQ(c.decode().beam_size(), 4);
  EXPECT_FLOAT_EQ(c.decode().length_penalty_alpha(), 0.6f);
  const LoadedConfig big = LoadPreset("tasks/translation/configs/ende_big.pbtxt");
  EXPECT_EQ(big.config.model().d_model(), 1024);
  EXPECT_EQ(big.config.model().d_ff(), 4096);
  EXPECT_EQ(big.config.model().num_heads(), 16);
  EXPECT_FLOAT_EQ(big.config.model().dropout(), 0.3f);
  EXPECT_EQ(big.config.train().average_last_checkpoints(), 20);
  // The parsing presets' settings: tasks/parsing/parsing_config_test.cc.
}

// The GPU preset is the CPU one in bf16 on CUDA with a bigger batch: the
// same model and schedule, so that their curves compare.
TEST(PresetsTest, GpuPresetIsTheSmallOneInBf16OnCuda) {
  const LoadedConfig small = LoadPreset("tasks/translation/configs/multi30k_ende_small.pbtxt");
  const LoadedConfig gpu = LoadPreset("tasks/translation/configs/multi30k_ende_gpu.pbtxt");
  EXPECT_EQ(gpu.config.train().device(), "cuda");
  EXPECT_EQ(gpu.config.train().dtype(), "bf16");
  EXPECT_GE(gpu.config.data().batching().max_target_tokens(), 8000);
  EXPECT_LE(gpu.config.data().batching().max_target_tokens(), 16000);
  EXPECT_EQ(gpu.config.model().SerializeAsString(), small.config.model().SerializeAsString());
  EXPECT_EQ(gpu.config.train().warmup_steps(), small.config.train().warmup_steps());
  EXPECT_FLOAT_EQ(gpu.config.train().lr_scale(), small.config.train().lr_scale());
  EXPECT_GT(gpu.config.train().validate_every_minutes(), 0);
}

}  // namespace
}  // namespace tfm
