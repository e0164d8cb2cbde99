// The algorithmic plugin in the engine: loading it (and refusing a plugin
// whose task name is taken), its config errors, and the whole path a user
// takes through the generic driver: train `reverse`, translate, evaluate.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tasks/driver/driver.h"
#include "core/plugin_loader.h"
#include "core/task_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"
#include "tests/util/preset_files.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

constexpr char kPlugin[] = "plugins/algorithmic/libalgorithmic_plugin.so";

// Loaded once for the whole binary, as --plugin= does for a run.
class AlgorithmicPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<LoadedPlugin> loaded = LoadEnginePlugin(testing::RunfilePath(kPlugin));
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    registered_ = new std::vector<std::string>(loaded->registered);
  }

  // The driver on `config` (a path) in `mode`; its output in *out.
  // Training stops after `minutes` at the latest.
  static absl::Status Drive(const std::string& config, const std::string& mode,
                            std::string* out = nullptr, DecodeRequest decode = {},
                            const std::string& work_dir = "", int minutes = 1) {
    DriverOptions options;
    options.config = config;
    options.mode = mode;
    options.work_dir = work_dir;
    options.decode = decode;
    options.minutes = minutes;
    std::ostringstream log;
    const absl::Status status = RunDriver(options, log);
    if (out != nullptr) *out = log.str();
    return status;
  }

  // A config file with `extensions` and the reverse preset's other sections.
  static std::string ConfigWith(const std::string& name, const std::string& extensions) {
    return testing::WriteTempFile(
        name, absl::StrCat("task: \"algorithmic\"\n", extensions,
                           "data { batching { max_length: 32 } work_dir: \"", ::testing::TempDir(),
                           "/", name, "_work\" }\n"));
  }

  static std::vector<std::string>* registered_;
};

std::vector<std::string>* AlgorithmicPluginTest::registered_ = nullptr;

TEST_F(AlgorithmicPluginTest, RegistersItsTaskOnly) {
  EXPECT_EQ(*registered_, std::vector<std::string>({"task:algorithmic"}));
  EXPECT_TRUE(TaskRegistry().Contains("algorithmic"));
}

// Every preset beside the plugin (found on disk) validates and names its
// problem: reverse_small.pbtxt is the reverse problem, and so on.
TEST_F(AlgorithmicPluginTest, EveryPresetValidates) {
  const std::vector<std::string> presets = testing::PresetFiles("plugins/algorithmic/configs");
  EXPECT_GE(presets.size(), 4u);  // reverse, reverse_small, sort, add at least.
  for (const std::string& preset : presets) {
    const std::string name = std::filesystem::path(preset).stem().string();
    const std::string problem = name.substr(0, name.find('_'));
    std::string out;
    const absl::Status status = Drive(testing::RunfilePath(preset), "validate", &out);
    EXPECT_TRUE(status.ok()) << preset << ": " << status;
    EXPECT_THAT(out, HasSubstr(absl::StrCat("problem: ", absl::AsciiStrToUpper(problem))))
        << preset;
  }
}

// The generic driver binary links the engine statically: every engine
// symbol the plugin uses must be in it (test binaries link shared
// libraries, which would hide a missing one).
TEST_F(AlgorithmicPluginTest, TheDriverBinaryLoadsItAndPrintsItsSettings) {
  const std::string command = absl::StrCat(
      testing::RunfilePath("tools/transformer"), " --plugin=", testing::RunfilePath(kPlugin),
      " validate --config=", testing::RunfilePath("plugins/algorithmic/configs/sort.pbtxt"),
      " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (size_t read = fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, read);
  EXPECT_EQ(pclose(pipe), 0) << out;
  EXPECT_THAT(out, HasSubstr("libalgorithmic_plugin.so: task:algorithmic"));
  EXPECT_THAT(out, HasSubstr("[type.googleapis.com/algorithmic.AlgorithmicConfig] {"));
  EXPECT_THAT(out, HasSubstr("problem: SORT"));
}

TEST_F(AlgorithmicPluginTest, ATakenTaskNameIsRefusedAndLeavesNoTrace) {
  const std::vector<std::string> before = TaskRegistry().Names();
  const absl::Status status =
      LoadEnginePlugin(testing::RunfilePath("tests/plugins/libduplicate_task_plugin.so")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(status.message()), HasSubstr("task 'translation' is already registered"));
  EXPECT_EQ(TaskRegistry().Names(), before);  // duplicate_task_extra is gone too.
  EXPECT_TRUE(RegistrationJournal::Get().Check().ok());
}

TEST_F(AlgorithmicPluginTest, APresetNamingAnUnknownTaskSaysSo) {
  const std::vector<std::string> before = TaskRegistry().Names();
  const std::string config = testing::WriteTempFile(
      "unknown_task.pbtxt", "name: \"x\"\ntask: \"no_such_plugin_task\"\n");
  const absl::Status status = Drive(config, "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("unknown_task.pbtxt:2: task: unknown task "
                                          "'no_such_plugin_task'"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("algorithmic"));  // The known ones, the plugin's too.
  EXPECT_THAT(std::string(status.message()), HasSubstr("--plugin="));
  EXPECT_EQ(TaskRegistry().Names(), before);
}

TEST_F(AlgorithmicPluginTest, AMissingConfigMessageIsNamed) {
  const absl::Status status = Drive(ConfigWith("missing.pbtxt", ""), "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("missing.pbtxt: task 'algorithmic' needs its "
                                          "settings: an extension of type "
                                          "algorithmic.AlgorithmicConfig, e.g. extensions {"));
}

TEST_F(AlgorithmicPluginTest, AnotherMessageInExtensionsIsNamed) {
  const absl::Status status = Drive(
      ConfigWith("wrong.pbtxt",
                 "extensions {\n  [type.googleapis.com/tfm.config.DecodeConfig] { beam_size: 2 }\n}\n"),
      "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("wrong.pbtxt:2: extensions[0] holds tfm.config.DecodeConfig"));
}

TEST_F(AlgorithmicPluginTest, BadSettingsAreNamed) {
  const absl::Status status = Drive(
      ConfigWith("bad.pbtxt",
                 "extensions {\n  [type.googleapis.com/algorithmic.AlgorithmicConfig] {\n"
                 "    problem: ADD base: 11 min_length: 3 max_length: 2\n  }\n}\n"),
      "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("bad.pbtxt:2: extensions[0] "
                                          "(algorithmic.AlgorithmicConfig): base: 11 is not in "
                                          "2..10; min_length 3, max_length 2"));
}

TEST_F(AlgorithmicPluginTest, AnUnknownFieldInTheMessageIsASyntaxError) {
  const absl::Status status = Drive(
      ConfigWith("typo.pbtxt",
                 "extensions {\n  [type.googleapis.com/algorithmic.AlgorithmicConfig] {\n"
                 "    problem: SORT max_lenght: 4\n  }\n}\n"),
      "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("typo.pbtxt:4:"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_lenght"));
}

TEST_F(AlgorithmicPluginTest, CorporaInThePresetAreRefused) {
  const std::string config = testing::WriteTempFile(
      "corpora.pbtxt",
      "task: \"algorithmic\"\n"
      "extensions { [type.googleapis.com/algorithmic.AlgorithmicConfig] { problem: SORT } }\n"
      "data {\n"
      "  train { format: PLAIN_TEXT source_path: \"a\" target_path: \"b\" }\n"
      "}\n");
  const absl::Status status = Drive(config, "validate");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("corpora.pbtxt:4: data.train: the algorithmic task generates its data"));
}

// The small preset learns to reverse digit sequences: train its 400
// updates, then evaluate the generated test split and translate lines of
// the user's. The preset takes under a minute on 2 cores alone, but beside
// other test binaries it has taken longer, so the wall-clock cap here is
// only a guard against a hang: the run must end on max_steps, never on the
// clock (a timed unit test would fail on a busy machine, not on a bug).
TEST_F(AlgorithmicPluginTest, LearnsToReverse) {
  const std::string config =
      testing::RunfilePath("plugins/algorithmic/configs/reverse_small.pbtxt");
  const std::string work_dir = ::testing::TempDir() + "/reverse_work";
  std::string out;
  constexpr int kGuardMinutes = 10;
  const absl::Status trained = Drive(config, "train", &out, {}, work_dir, kGuardMinutes);
  ASSERT_TRUE(trained.ok()) << trained << "\n" << out;
  EXPECT_THAT(out, HasSubstr("validation: loss and accuracy"));
  EXPECT_THAT(out, HasSubstr("stopped at update 400: reached max_steps"));

  DecodeRequest evaluate;
  evaluate.model = work_dir;
  evaluate.source = work_dir + "/data/test.src";
  evaluate.reference = work_dir + "/data/test.tgt";
  ASSERT_TRUE(Drive(config, "evaluate", &out, evaluate).ok()) << out;
  const std::string label = "exact-sequence accuracy = ";
  const size_t at = out.find(label);
  ASSERT_NE(at, std::string::npos) << out;
  double accuracy = 0;
  ASSERT_TRUE(absl::SimpleAtod(out.substr(at + label.size(), out.find('%', at) - at - label.size()),
                               &accuracy))
      << out;
  EXPECT_GE(accuracy, 99.0) << out;
  EXPECT_THAT(out, HasSubstr("/1000)"));  // The whole test split.

  DecodeRequest translate;
  translate.model = work_dir;
  translate.input = testing::WriteTempFile("reverse_input.txt", "1 2 3 4 5\n9 0 7\n");
  translate.output = ::testing::TempDir() + "/reverse_output.txt";
  ASSERT_TRUE(Drive(config, "translate", &out, translate).ok()) << out;
  std::ifstream output(translate.output);
  std::stringstream text;
  text << output.rdbuf();
  EXPECT_EQ(text.str(), "5 4 3 2 1\n7 0 9\n");
}

}  // namespace
}  // namespace tfm
