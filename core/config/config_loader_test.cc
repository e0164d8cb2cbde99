#include "core/config/config_loader.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "core/cuda/runtime.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigLoaderTest, DefaultsAreThePapersBaseModel) {
  const LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"", "t.pbtxt");
  const config::TaskConfig& c = loaded.config;
  EXPECT_EQ(c.model().num_encoder_layers(), 6);
  EXPECT_EQ(c.model().d_ff(), 2048);
  EXPECT_EQ(c.model().d_k(), 64);
  EXPECT_FLOAT_EQ(c.model().label_smoothing(), 0.1f);
  EXPECT_TRUE(c.model().share_embeddings());
  EXPECT_EQ(c.train().warmup_steps(), 4000);
  EXPECT_FLOAT_EQ(c.train().adam().beta1(), 0.9f);
  EXPECT_EQ(c.data().batching().max_source_tokens(), 25000);
  EXPECT_EQ(c.decode().max_length_offset(), 50);
  EXPECT_EQ(c.train().validate_bleu_sentences(), 500);
  EXPECT_EQ(c.train().best_checkpoint_metric(), "auto");
}

TEST(ConfigLoaderTest, SyntaxErrorNamesFileLineAndColumn) {
  const std::string path = WriteFile("bad.pbtxt",
                                     "task: \"translation\"\n"
                                     "model {\n"
                                     "  d_model: 512\n"
                                     "  num_heads: eight\n"
                                     "}\n");
  absl::Status status = LoadTaskConfigFile(path).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(path + ":4:14:"), std::string::npos) << status;
}

TEST(ConfigLoaderTest, UnknownFieldIsAnErrorWithPosition) {
  absl::Status status =
      ParseTaskConfig("task: \"translation\"\nmodel {\n  d_modle: 512\n}\n", "typo.pbtxt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("typo.pbtxt:3:"), std::string::npos) << status;
  EXPECT_NE(status.message().find("d_modle"), std::string::npos) << status;
}

TEST(ConfigLoaderTest, MissingFileNamesThePath) {
  absl::Status status = LoadTaskConfigFile("/no/such/config.pbtxt").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/no/such/config.pbtxt"), std::string::npos);
}

TEST(ConfigLoaderTest, OverridesSetScalarsNestedAndRepeatedFields) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\ndata { train { name: \"a\" format: PLAIN_TEXT } }\n", "c.pbtxt");
  ASSERT_TRUE(ApplyOverride("train.warmup_steps=8000", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("train.adam.beta2=0.997", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("decode.strategy=GREEDY", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("data.train[0].source_path=/x/y z.en", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("data.train[1].name=second", &loaded).ok());  // Appends.
  EXPECT_EQ(loaded.config.train().warmup_steps(), 8000);
  EXPECT_FLOAT_EQ(loaded.config.train().adam().beta2(), 0.997f);
  EXPECT_EQ(loaded.config.decode().strategy(), config::DecodeConfig::GREEDY);
  EXPECT_EQ(loaded.config.data().train(0).source_path(), "/x/y z.en");
  EXPECT_EQ(loaded.config.data().train(1).name(), "second");
  EXPECT_EQ(loaded.sources.Describe("train.warmup_steps"), "--set=train.warmup_steps=8000");
}

// --data=DIR: file corpora keep their names in DIR, treebank and catalog
// roots become DIR, unset fields stay unset, and errors name --data.
TEST(ConfigLoaderTest, DataFolderRelocatesEveryCorpus) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "data {\n"
      "  train { format: PLAIN_TEXT source_path: \"../shared/data/multi30k/train.en.gz\"\n"
      "          target_path: \"../shared/data/multi30k/train.de.gz\" }\n"
      "  valid { format: PTB_MRG root: \"../shared/data/ptb_sample\" }\n"
      "  test { format: PLAIN_TEXT source_path: \"test.en\" target_path: \"test.de\" }\n"
      "}\n",
      "m.pbtxt");
  RelocateCorpora("/data/copy", &loaded);
  const config::DataConfig& data = loaded.config.data();
  EXPECT_EQ(data.train(0).source_path(), "/data/copy/train.en.gz");
  EXPECT_EQ(data.train(0).target_path(), "/data/copy/train.de.gz");
  EXPECT_FALSE(data.train(0).has_root());
  EXPECT_EQ(data.valid(0).root(), "/data/copy");
  EXPECT_FALSE(data.valid(0).has_source_path());
  EXPECT_EQ(data.test(0).source_path(), "/data/copy/test.en");
  EXPECT_EQ(loaded.sources.Describe("data.valid[0].root"), "--data=/data/copy");
  EXPECT_EQ(loaded.sources.Describe("data.test[0].target_path"), "--data=/data/copy");
  // No folder: nothing moves.
  LoadedConfig unchanged = loaded;
  RelocateCorpora("", &unchanged);
  EXPECT_EQ(unchanged.config.data().test(0).source_path(), "/data/copy/test.en");
}

TEST(ConfigLoaderTest, BadOverridesExplainThemselves) {
  LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"", "c.pbtxt");
  absl::Status unknown = ApplyOverride("model.d_modle=3", &loaded);
  EXPECT_NE(unknown.message().find("ModelConfig has no field 'd_modle'"), std::string::npos);
  EXPECT_NE(unknown.message().find("d_model"), std::string::npos);  // Lists the fields.
  absl::Status bad_value = ApplyOverride("model.d_model=big", &loaded);
  EXPECT_NE(bad_value.message().find("'big' is not a valid int32"), std::string::npos) << bad_value;
  EXPECT_FALSE(ApplyOverride("model", &loaded).ok());
  EXPECT_FALSE(ApplyOverride("model=3", &loaded).ok());
  EXPECT_FALSE(ApplyOverride("data.train.name=x", &loaded).ok());  // Needs an index.
  EXPECT_FALSE(ApplyOverride("data.train[5].name=x", &loaded).ok());
}

TEST(ConfigLoaderTest, SemanticErrorsNameTheLineOrTheOverride) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "model {\n"
      "  d_model: 512\n"
      "  num_heads: 7\n"
      "  dropout: 1.5\n"
      "}\n",
      "m.pbtxt");
  absl::Status status = ValidateTaskConfig(loaded);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("m.pbtxt:4: model.num_heads: d_model 512 is not divisible by 7"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("m.pbtxt:5: model.dropout: must be in [0, 1)"), std::string::npos)
      << status;
  ASSERT_TRUE(ApplyOverride("decode.beam_size=0", &loaded).ok());
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "--set=decode.beam_size=0: decode.beam_size: must be positive"),
            std::string::npos);
  ASSERT_TRUE(ApplyOverride("train.validate_bleu_sentences=-1", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("train.best_checkpoint_metric=", &loaded).ok());
  status = ValidateTaskConfig(loaded);
  EXPECT_NE(status.message().find("train.validate_bleu_sentences: must be >= 0"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("train.best_checkpoint_metric: must not be empty"),
            std::string::npos)
      << status;
}

TEST(ConfigLoaderTest, HeadSizesMustSplitDModel) {
  const LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "model {\n"
      "  d_model: 512\n"
      "  num_heads: 16\n"
      "  d_v: 32\n"
      "}\n",
      "m.pbtxt");
  const absl::Status status = ValidateTaskConfig(loaded);
  // d_k is left at its default (64): the error names the section's line.
  EXPECT_NE(status.message().find("m.pbtxt:2: model.d_k: 64 must be d_model / num_heads = "
                                  "512 / 16 = 32"),
            std::string::npos)
      << status;
  EXPECT_EQ(status.message().find("model.d_v"), std::string::npos) << status;
}

TEST(ConfigLoaderTest, TrainingDTypeMustHaveKernelsOnTheDevice) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "train {\n"
      "  device: \"cpu\"\n"
      "  dtype: \"f16\"\n"
      "}\n",
      "t.pbtxt");
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "t.pbtxt:4: train.dtype: f16 is not supported for training on cpu"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("train.dtype=bf16", &loaded).ok());
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("train.dtype=i32", &loaded).ok());
  EXPECT_FALSE(ValidateTaskConfig(loaded).ok());
  ASSERT_TRUE(ApplyOverride("train.dtype=f32", &loaded).ok());
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
}

TEST(ConfigLoaderTest, LossScalingNeedsAModeAndAPowerOfTwo) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "train {\n"
      "  loss_scaling: \"static\"\n"
      "  initial_loss_scale: 100\n"
      "  min_loss_scale: 0\n"
      "}\n",
      "s.pbtxt");
  const absl::Status status = ValidateTaskConfig(loaded);
  EXPECT_NE(status.message().find("s.pbtxt:3: train.loss_scaling: \"static\" is not \"auto\", "
                                  "\"dynamic\" or \"off\""),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("s.pbtxt:4: train.initial_loss_scale: must be a power of two"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("s.pbtxt:5: train.min_loss_scale: must be positive"),
            std::string::npos)
      << status;
  ASSERT_TRUE(ApplyOverride("train.loss_scaling=dynamic", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("train.initial_loss_scale=0.5", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("train.min_loss_scale=1", &loaded).ok());
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "train.min_loss_scale: 1 exceeds train.initial_loss_scale 0.5"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("train.initial_loss_scale=65536", &loaded).ok());
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
}

TEST(ConfigLoaderTest, AveragingNeedsCheckpoints) {
  const LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "train { checkpoint_every_minutes: 0 checkpoint_every_steps: 0 }\n",
      "c.pbtxt");
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "train.average_last_checkpoints: averages the last 5 checkpoints"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  // The best validated checkpoints need validations, by count or by time.
  const LoadedConfig best = *ParseTaskConfig(
      "task: \"translation\"\n"
      "train {\n"
      "  validate_every_steps: 0\n"
      "  keep_best_checkpoints: 5\n"
      "}\n",
      "b.pbtxt");
  EXPECT_NE(ValidateTaskConfig(best).message().find(
                "b.pbtxt:4: train.keep_best_checkpoints: keeps the 5 best validated checkpoints, "
                "but validate_every_steps and validate_every_minutes are both 0"),
            std::string::npos)
      << ValidateTaskConfig(best);
  LoadedConfig negative = *ParseTaskConfig("task: \"translation\"\n", "n.pbtxt");
  ASSERT_TRUE(ApplyOverride("train.keep_best_checkpoints=-1", &negative).ok());
  EXPECT_NE(ValidateTaskConfig(negative).message().find("train.keep_best_checkpoints"),
            std::string::npos)
      << ValidateTaskConfig(negative);
}

// A GPU that is not here fails the run, not the validation: a config for a
// GPU machine can be checked on a laptop.
TEST(ConfigLoaderTest, MissingGpuFailsOnlyWhereTheConfigRuns) {
  const std::string missing = absl::StrCat("cuda:", cuda::DeviceCount());
  const LoadedConfig loaded = *ParseTaskConfig(
      absl::StrCat("task: \"translation\"\n"
                   "data { work_dir: \"", std::getenv("TEST_TMPDIR"), "/work\" }\n"
                   "train {\n"
                   "  device: \"", missing, "\"\n"
                   "}\n"),
      "g.pbtxt");
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
  const absl::Status here = CheckConfigRunsHere(loaded);
  EXPECT_EQ(here.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(here.message().find(absl::StrCat("g.pbtxt:4: train.device: ", missing, " but ")),
            std::string::npos)
      << here;
}

TEST(ConfigLoaderTest, WorkDirMustBeCreatable) {
  const std::string file = WriteFile("not_a_dir", "x");
  LoadedConfig loaded = *ParseTaskConfig(
      absl::StrCat("task: \"translation\"\ndata { work_dir: \"", file, "/run\" }\n"),
      "w.pbtxt");
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok());
  const absl::Status blocked = CheckConfigRunsHere(loaded);
  EXPECT_NE(blocked.message().find(
                absl::StrCat("w.pbtxt:2: data.work_dir: ", file, " is not a directory")),
            std::string::npos)
      << blocked;
  ASSERT_TRUE(ApplyOverride(absl::StrCat("data.work_dir=", std::getenv("TEST_TMPDIR"),
                                         "/new/nested/run"),
                            &loaded)
                  .ok());
  EXPECT_TRUE(CheckConfigRunsHere(loaded).ok()) << CheckConfigRunsHere(loaded);
  EXPECT_FALSE(std::filesystem::exists(absl::StrCat(std::getenv("TEST_TMPDIR"), "/new")))
      << "checking must not create the directory";
}

// Settings the trainer would refuse late (after writing into the work
// directory), or take silently in a nonsense sense: refused by the config
// check, naming the file's line or the --set.
TEST(ConfigLoaderTest, TrainingSettingsOutOfRangeAreRefusedUpFront) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "train {\n"
      "  update_freq: 0\n"
      "  patience: -1\n"
      "}\n",
      "u.pbtxt");
  ASSERT_TRUE(ApplyOverride("train.validate_every_minutes=-1", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("data.batching.shuffle_buffer=-1", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("data.batching.prefetch_batches=-1", &loaded).ok());
  const absl::Status status = ValidateTaskConfig(loaded);
  for (const std::string expected :
       {"u.pbtxt:3: train.update_freq: must be positive, got 0",
        "u.pbtxt:4: train.patience: must be >= 0, got -1",
        "--set=train.validate_every_minutes=-1: train.validate_every_minutes: must be >= 0",
        "data.batching.shuffle_buffer: must be >= 0",
        "data.batching.prefetch_batches: must be >= 0"}) {
    EXPECT_NE(status.message().find(expected), std::string::npos) << expected << "\n" << status;
  }
}

// A vocabulary too small for the special ids names where its size was set.
TEST(ConfigLoaderTest, ATooSmallVocabularyNamesWhereItsSizeWasSet) {
  LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"\n", "v.pbtxt");
  ASSERT_TRUE(ApplyOverride("data.tokenizer.vocab_size=1", &loaded).ok());
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "outside the vocabulary of 1 pieces (data.tokenizer.vocab_size, "
                "--set=data.tokenizer.vocab_size=1)"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
}

// BPE-dropout is a probability, and skips merges only a BPE vocabulary has.
TEST(ConfigLoaderTest, BpeDropoutIsAProbabilityOverABpeVocabulary) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\ndata { tokenizer { model_type: UNIGRAM bpe_dropout: 0.1 } }\n",
      "d.pbtxt");
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "d.pbtxt:2: data.tokenizer.bpe_dropout: needs data.tokenizer.model_type BPE "
                "(d.pbtxt:2 sets another)"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("data.tokenizer.model_type=BPE", &loaded).ok());
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("data.tokenizer.bpe_dropout=1", &loaded).ok());
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "--set=data.tokenizer.bpe_dropout=1: data.tokenizer.bpe_dropout: must be in "
                "[0, 1), got 1"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
}

TEST(ConfigLoaderTest, LearnedPositionsMustHoldTheLongestTrainingPair) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "model {\n"
      "  positional_encoding: LEARNED\n"
      "  max_positions: 5\n"
      "}\n"
      "data { batching { max_length: 64 } }\n",
      "p.pbtxt");
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "p.pbtxt:4: model.max_positions: 5 rows of the LEARNED position tables "
                "cannot hold"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  ASSERT_TRUE(ApplyOverride("model.max_positions=64", &loaded).ok());
  EXPECT_EQ(ValidateTaskConfig(loaded).message().find("max_positions"), std::string::npos)
      << ValidateTaskConfig(loaded);
  // Sinusoidal positions have no table to outgrow.
  ASSERT_TRUE(ApplyOverride("model.max_positions=5", &loaded).ok());
  ASSERT_TRUE(ApplyOverride("model.positional_encoding=SINUSOIDAL", &loaded).ok());
  EXPECT_EQ(ValidateTaskConfig(loaded).message().find("max_positions"), std::string::npos)
      << ValidateTaskConfig(loaded);
}

// A bad --set value is one error, without protobuf's own log line on stderr
// before it.
TEST(ConfigLoaderTest, ABadOverrideValueLogsNothingBesideItsError) {
  LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"\n", "o.pbtxt");
  ::testing::internal::CaptureStderr();
  const absl::Status scalar = ApplyOverride("train.max_steps=abc", &loaded);
  const absl::Status repeated = ApplyOverride("train.device=cpu", &loaded);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(scalar.message().find("'abc' is not a valid int64"), std::string::npos) << scalar;
  EXPECT_TRUE(repeated.ok()) << repeated;
  EXPECT_EQ(logged, "");
}

TEST(ConfigLoaderTest, DecodingDTypeIsAFloatType) {
  LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"\n", "f.pbtxt");
  for (const char* dtype : {"f64", "i32"}) {
    ASSERT_TRUE(ApplyOverride(absl::StrCat("decode.dtype=", dtype), &loaded).ok());
    EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                  absl::StrCat("decode.dtype: '", dtype, "': expected f32, bf16 or f16")),
              std::string::npos)
        << ValidateTaskConfig(loaded);
  }
  ASSERT_TRUE(ApplyOverride("decode.dtype=bf16", &loaded).ok());
  EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
}

TEST(ConfigLoaderTest, KeyValueCacheDTypeIsAutoF32OrF16) {
  LoadedConfig loaded = *ParseTaskConfig("task: \"translation\"\n", "k.pbtxt");
  EXPECT_EQ(loaded.config.decode().kv_cache_dtype(), "auto");
  for (const char* dtype : {"bf16", "int8"}) {
    ASSERT_TRUE(ApplyOverride(absl::StrCat("decode.kv_cache_dtype=", dtype), &loaded).ok());
    EXPECT_NE(ValidateTaskConfig(loaded).message().find(absl::StrCat(
                  "decode.kv_cache_dtype: '", dtype, "': expected auto, f32 or f16")),
              std::string::npos)
        << ValidateTaskConfig(loaded);
  }
  for (const char* dtype : {"auto", "f32", "f16"}) {
    ASSERT_TRUE(ApplyOverride(absl::StrCat("decode.kv_cache_dtype=", dtype), &loaded).ok());
    EXPECT_TRUE(ValidateTaskConfig(loaded).ok()) << ValidateTaskConfig(loaded);
  }
}

TEST(ConfigLoaderTest, AShortlistThatKeepsNoTokensIsRefused) {
  LoadedConfig loaded = *ParseTaskConfig(
      "task: \"translation\"\n"
      "decode {\n"
      "  shortlist: \"/nonexistent/m30k.shortlist\"\n"
      "  shortlist_frequent: 0\n"
      "  shortlist_best: 0\n"
      "}\n",
      "d.pbtxt");
  EXPECT_NE(ValidateTaskConfig(loaded).message().find(
                "d.pbtxt:5: decode.shortlist_best: and decode.shortlist_frequent are both 0"),
            std::string::npos)
      << ValidateTaskConfig(loaded);
  // Where it runs, the file must be there.
  EXPECT_NE(CheckConfigRunsHere(loaded, /*check_devices=*/false)
                .message()
                .find("d.pbtxt:3: decode.shortlist: /nonexistent/m30k.shortlist: no such file"),
            std::string::npos)
      << CheckConfigRunsHere(loaded, false);
}

}  // namespace
}  // namespace tfm
