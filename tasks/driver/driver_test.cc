#include "tasks/driver/driver.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cpu_features.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

TEST(DriverTest, RepeatedFlagsAreAllKept) {
  std::vector<std::string> args = {"prog",  "--plugin=a.so", "--set=x.y=1",  "--config=c",
                                   "--set", "x.z=2",         "-plugin=b.so", "--list"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  DriverOptions options;
  std::vector<char*> rest = ExtractRepeatedFlags(argv.size(), argv.data(), &options);
  EXPECT_EQ(options.plugins, std::vector<std::string>({"a.so", "b.so"}));
  EXPECT_EQ(options.overrides, std::vector<std::string>({"x.y=1", "x.z=2"}));
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_STREQ(rest[1], "--config=c");
  EXPECT_STREQ(rest[2], "--list");
}

// A task's own flags (TaskDef::flags) are taken out before absl parses the
// driver's: a built-in task's with its value in the same or the next
// argument, any other (a plugin's, not loaded yet) as --name=value.
TEST(DriverTest, TaskFlagsAreTakenOutForTheTask) {
  std::vector<std::string> args = {"prog",
                                   "parse",
                                   "--config=c",
                                   "--tag_dictionary=3",
                                   "--open_class_tags",
                                   "1",
                                   "--nolist",
                                   "--plugin_setting=x",
                                   "--",
                                   "--tag_dictionary=9"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  DriverOptions options;
  std::vector<char*> rest = ExtractTaskFlags(argv, &options);
  EXPECT_EQ(options.task_flags,
            (std::map<std::string, std::string>{
                {"tag_dictionary", "3"}, {"open_class_tags", "1"}, {"plugin_setting", "x"}}));
  ASSERT_EQ(rest.size(), 6u);
  EXPECT_STREQ(rest[1], "parse");
  EXPECT_STREQ(rest[2], "--config=c");
  EXPECT_STREQ(rest[3], "--nolist");
  EXPECT_STREQ(rest[4], "--");
  EXPECT_STREQ(rest[5], "--tag_dictionary=9");

  // The task of the config must declare them.
  DriverOptions translation;
  translation.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  translation.task_flags = {{"tag_dictionary", "3"}};
  std::ostringstream out;
  const absl::Status status = RunDriver(translation, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("unknown flag --tag_dictionary: not a flag of the driver nor "
                                  "of task 'translation'"),
            std::string::npos)
      << status;
}

TEST(DriverTest, ListShowsOpsWithKernelsAndTasks) {
  DriverOptions options;
  options.list = true;
  std::ostringstream out;
  ASSERT_TRUE(RunDriver(options, out).ok());
  EXPECT_NE(out.str().find("  fill  [CPU/bf16 CPU/f16 CPU/f32 CPU/i32 CPU/i64"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("tasks:\n  parsing\n  translation\n"), std::string::npos);
  // The parsing task's treebanks and leaf alignment, beside the engine's formats.
  EXPECT_NE(out.str().find("corpus formats:\n  GETTEXT_MO\n  PLAIN_TEXT\n  PTB_MRG\n  WMT_SGML\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("decoder input hooks:\n  leaf_alignment\n"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("cuda: "), std::string::npos);
  // The kernels chosen for this machine: the CPU's ISA and the BLAS core.
  EXPECT_NE(out.str().find("cpu: " + CpuSummary() + "\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("blas: OpenBLAS"), std::string::npos) << out.str();
}

TEST(DriverTest, ValidatesTheEmbeddedDefault) {
  DriverOptions options;
  options.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  options.overrides = {"train.warmup_steps=8000"};
  std::ostringstream out;
  absl::Status status = RunDriver(options, out);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_NE(out.str().find("is valid (task 'translation')"), std::string::npos);
  EXPECT_NE(out.str().find("warmup_steps: 8000"), std::string::npos);
  EXPECT_NE(out.str().find("gettext catalogs in /usr/share/locale/de/LC_MESSAGES"),
            std::string::npos)
      << out.str();
}

TEST(DriverTest, ErrorsAreClear) {
  std::ostringstream out;
  DriverOptions no_config;
  EXPECT_NE(RunDriver(no_config, out).message().find("no config"), std::string::npos);

  DriverOptions unknown_task;
  unknown_task.config = testing::WriteTempFile("unknown_task.pbtxt", "task: \"summarization\"\n");
  absl::Status status = RunDriver(unknown_task, out);
  EXPECT_NE(status.message().find("unknown task 'summarization'; known tasks: parsing, "
                                  "translation"),
            std::string::npos)
      << status;

  DriverOptions missing_corpus;
  missing_corpus.config = testing::RunfilePath("tasks/translation/configs/ende_base.pbtxt");
  missing_corpus.overrides = {"data.train[0].source_path=/no/such/train.en"};
  status = RunDriver(missing_corpus, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/no/such/train.en"), std::string::npos) << status;

  DriverOptions bad_mode;
  bad_mode.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  bad_mode.mode = "dance";
  EXPECT_NE(RunDriver(bad_mode, out).message().find("unknown command 'dance'"), std::string::npos);

  DriverOptions decode;  // Decoding needs a trained model, and says which flag.
  decode.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  decode.mode = "decode";
  status = RunDriver(decode, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--model"), std::string::npos) << status;
  decode.decode.model = "/no/such/model_dir";
  status = RunDriver(decode, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/no/such/model_dir"), std::string::npos) << status;
  decode.mode = "translate";  // The users' name for the same command.
  status = RunDriver(decode, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/no/such/model_dir"), std::string::npos) << status;
}

// A numeric flag out of range is an error naming it, before anything runs:
// not a silent fall back to the config's value.
TEST(DriverTest, NumericFlagsOutOfRangeAreErrors) {
  std::ostringstream out;
  DriverOptions options;
  options.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  options.mode = "decode";
  options.minutes = std::nan("");
  options.average_last = -1;
  options.decode.beam = -4;
  options.decode.nbest = -1;
  options.decode.max_tokens = -100;
  options.decode.shortlist_best = -2;
  options.decode.alpha = std::numeric_limits<double>::infinity();
  const absl::Status status = RunDriver(options, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  for (const char* expected :
       {"--minutes=nan: must be a number >= 0", "--last=-1: must be >= 0",
        "--beam=-4: must be >= 0", "--nbest=-1: must be >= 0", "--max_tokens=-100: must be >= 0",
        "--shortlist_best=-2: must be >= -1", "--alpha=inf: must be a finite number >= 0"}) {
    EXPECT_NE(status.message().find(expected), std::string::npos) << expected << "\n" << status;
  }
  // A list of models with an empty member, or a list where one model goes.
  DriverOptions lists;
  lists.config = options.config;
  lists.mode = "decode";
  lists.decode.model = "/a,,/b";
  EXPECT_NE(RunDriver(lists, out).message().find("--model=/a,,/b: an empty member"),
            std::string::npos);
  lists.decode.model = "/a,/b";
  lists.mode = "shortlist";
  EXPECT_NE(RunDriver(lists, out).message().find("shortlist takes one model"), std::string::npos);
  // The defaults stand for the model's settings; a real alpha is taken.
  DriverOptions defaults;
  defaults.config = options.config;
  defaults.mode = "decode";
  defaults.decode.alpha = 1.5;
  EXPECT_EQ(RunDriver(defaults, out).message().find("--alpha"), std::string::npos);
  options.decode.alpha = -0.5;
  EXPECT_NE(RunDriver(options, out).message().find("--alpha=-0.5"), std::string::npos);
  // average takes the last checkpoints or the best, not both.
  DriverOptions average;
  average.config = options.config;
  average.mode = "average";
  average.average_best = -1;
  EXPECT_NE(RunDriver(average, out).message().find("--best=-1: must be >= 0"), std::string::npos);
  average.average_best = 3;
  average.average_last = 2;
  EXPECT_NE(RunDriver(average, out).message().find("--last=2 and --best=3: average takes one"),
            std::string::npos);
}

// A flag only other commands read is an error, named with the commands that
// read it; the same flag given to its own command passes this check.
TEST(DriverTest, FlagsTheCommandDoesNotReadAreErrors) {
  std::ostringstream out;
  DriverOptions options;
  options.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  options.mode = "translate";
  options.given_flags = {"split", "minutes", "beam", "config"};
  const absl::Status status = RunDriver(options, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--split is not read by translate (only by evaluate)"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("--minutes is not read by translate (only by run and train)"),
            std::string::npos)
      << status;
  EXPECT_EQ(status.message().find("--beam"), std::string::npos) << status;
  options.mode = "evaluate";
  options.given_flags = {"nbest", "input", "last", "best"};
  const absl::Status evaluate = RunDriver(options, out);
  for (const char* expected :
       {"--nbest is not read by evaluate (only by translate/parse/decode)",
        "--input is not read by evaluate", "--last is not read by evaluate",
        "--best is not read by evaluate (only by average)"}) {
    EXPECT_NE(evaluate.message().find(expected), std::string::npos) << expected << "\n" << evaluate;
  }
  // Read by its command: no such error (the command fails later, for want
  // of a model).
  options.given_flags = {"split", "src", "ref"};
  EXPECT_EQ(RunDriver(options, out).message().find("is not read by"), std::string::npos);
  options.mode = "parse";
  options.given_flags = {"nbest", "input"};
  EXPECT_EQ(RunDriver(options, out).message().find("is not read by"), std::string::npos);
}

// validate checks the files a run would read, a shortlist among them, but
// not the devices.
TEST(DriverTest, ValidateChecksAShortlistFile) {
  std::ostringstream out;
  DriverOptions options;
  options.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  options.mode = "validate";
  options.overrides = {"decode.shortlist=/no/such/file.shortlist"};
  const absl::Status status = RunDriver(options, out);
  EXPECT_NE(status.message().find("decode.shortlist: /no/such/file.shortlist: no such file"),
            std::string::npos)
      << status;
  options.overrides = {"train.device=cuda:7"};
  EXPECT_TRUE(RunDriver(options, out).ok()) << RunDriver(options, out);
}

// Translation knows its validation score: a metric it cannot compute is
// caught when the config loads, naming the override.
TEST(DriverTest, TranslationChecksTheBestCheckpointMetric) {
  DriverOptions options;
  options.config = testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  std::ostringstream out;
  for (const char* metric : {"auto", "loss", "bleu"}) {
    options.overrides = {absl::StrCat("train.best_checkpoint_metric=", metric)};
    EXPECT_TRUE(RunDriver(options, out).ok()) << metric;
  }
  options.overrides = {"train.best_checkpoint_metric=chrf"};
  absl::Status status = RunDriver(options, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("--set=train.best_checkpoint_metric=chrf: "
                                  "train.best_checkpoint_metric: \"chrf\" is not one of"),
            std::string::npos)
      << status;
  options.overrides = {"train.best_checkpoint_metric=bleu", "train.validate_bleu_sentences=0"};
  status = RunDriver(options, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("validate_bleu_sentences > 0"), std::string::npos) << status;
}

TEST(DriverTest, PresetNamesResolveBesideTheDefaultAndInEveryTask) {
  const std::string default_config =
      testing::RunfilePath("tasks/translation/configs/ende_gettext.pbtxt");
  const std::string configs = default_config.substr(0, default_config.rfind('/') + 1);
  EXPECT_EQ(ResolvePreset("ende_base", default_config), configs + "ende_base.pbtxt");
  const std::string parsing = ResolvePreset("wsj_parsing", default_config);
  EXPECT_NE(parsing.find("/tasks/parsing/configs/wsj_parsing.pbtxt"), std::string::npos) << parsing;
  // Paths and unknown names are left to the loader, which names the file.
  EXPECT_EQ(ResolvePreset("/abs/x.pbtxt", default_config), "/abs/x.pbtxt");
  EXPECT_EQ(ResolvePreset("no_such_preset", default_config).find(configs), std::string::npos);
}

// train and average over a work directory with checkpoints, given no
// --config, take the config its latest committed checkpoint saved.
TEST(DriverTest, TrainAndAverageWithoutConfigTakeTheWorkDirectorysConfig) {
  const std::filesystem::path work_dir =
      std::filesystem::path(::testing::TempDir()) / "driver_work_dir_config";
  std::filesystem::remove_all(work_dir);
  auto make_checkpoint = [&](const std::string& name, bool committed) {
    const std::filesystem::path dir = work_dir / name;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.pbtxt") << "task: \"translation\"\n";
    if (committed) std::ofstream(dir / "MANIFEST") << "";
  };
  // No checkpoint yet: a new run takes the preset.
  EXPECT_EQ(WorkDirConfig("train", "", work_dir.string()), "");
  make_checkpoint("checkpoint_000000010", true);
  make_checkpoint("checkpoint_000000020", true);
  make_checkpoint("checkpoint_000000030", false);  // A save cut short.
  const std::string latest = (work_dir / "checkpoint_000000020" / "config.pbtxt").string();
  EXPECT_EQ(WorkDirConfig("train", "", work_dir.string()), latest);
  EXPECT_EQ(WorkDirConfig("average", "", work_dir.string()), latest);
  // --config wins; other commands and no --workdir keep the preset.
  EXPECT_EQ(WorkDirConfig("train", "multi30k_ende_small", work_dir.string()), "");
  EXPECT_EQ(WorkDirConfig("run", "", work_dir.string()), "");
  EXPECT_EQ(WorkDirConfig("evaluate", "", work_dir.string()), "");
  EXPECT_EQ(WorkDirConfig("train", "", ""), "");
  std::filesystem::remove_all(work_dir);
}

}  // namespace
}  // namespace tfm
