// The parsing task's settings: its presets, written with its ParsingConfig
// extension, and configs (and checkpoints' saved configs) written before
// it, whose deprecated fields of the engine's schema are moved into it when
// they are read.
#include "tasks/parsing/parsing_config.h"

#include <string>

#include "core/config/config_loader.h"
#include "gtest/gtest.h"
#include "tasks/parsing/leaf_alignment_hook.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

LoadedConfig Preset(const std::string& name) {
  absl::StatusOr<LoadedConfig> loaded =
      LoadTaskConfig(testing::RunfilePath("tasks/parsing/configs/" + name), {});
  EXPECT_TRUE(loaded.ok()) << name << ": " << loaded.status();
  return loaded.ok() ? *std::move(loaded) : LoadedConfig();
}

TEST(ParsingConfigTest, PresetsParseAndValidate) {
  for (const std::string name : {"wsj_parsing.pbtxt", "wsj_sample_cpu.pbtxt"}) {
    const LoadedConfig loaded = Preset(name);
    EXPECT_TRUE(CheckParsingConfig(loaded).ok()) << name << ": " << CheckParsingConfig(loaded);
  }
}

TEST(ParsingConfigTest, PresetsKeepTheirSettings) {
  const LoadedConfig parsing = Preset("wsj_parsing.pbtxt");
  EXPECT_EQ(parsing.config.model().num_encoder_layers(), 4);
  EXPECT_EQ(parsing.config.decode().beam_size(), 21);
  EXPECT_FLOAT_EQ(parsing.config.decode().length_penalty_alpha(), 0.3f);
  EXPECT_EQ(parsing.config.decode().max_length_offset(), 300);
  // The CPU preset decodes as the paper does, on the document split.
  const LoadedConfig sample = Preset("wsj_sample_cpu.pbtxt");
  EXPECT_EQ(sample.config.decode().beam_size(), 21);
  EXPECT_FLOAT_EQ(sample.config.decode().length_penalty_alpha(), 0.3f);
  EXPECT_EQ(sample.config.decode().max_length_offset(), 300);
  EXPECT_EQ(sample.config.data().train(0).last_document(), 169);
  EXPECT_EQ(sample.config.data().valid(0).first_document(), 170);
  EXPECT_EQ(sample.config.data().test(0).first_document(), 180);
  EXPECT_EQ(sample.config.data().test(0).last_document(), 189);
  // Its parsing settings, now in its extension.
  EXPECT_EQ(sample.config.model().decoder_input_hook(), kLeafAlignmentHook);
  const parsing::ParsingConfig settings = ParsingSettings(sample.config);
  EXPECT_TRUE(settings.leaf_alignment_last_piece());
  EXPECT_EQ(settings.tag_dictionary_min_count(), 5);
  EXPECT_TRUE(settings.tag_dictionary_open_class());
  // The other preset sets none of them.
  EXPECT_EQ(parsing.config.model().decoder_input_hook(), "");
  EXPECT_EQ(ParsingSettings(parsing.config).tag_dictionary_min_count(), 0);
}

// A config as the CPU preset was written before the extension: it reads as
// the preset does now.
TEST(ParsingConfigTest, DeprecatedFieldsMoveIntoTheExtension) {
  absl::StatusOr<LoadedConfig> old = ParseTaskConfig(
      "task: \"parsing\"\n"
      "model { d_model: 256 decoder_leaf_alignment: true\n"
      "        decoder_leaf_alignment_last_piece: true }\n"
      "decode { beam_size: 21 tag_dictionary_min_count: 5 tag_dictionary_open_class: true }\n",
      "old.pbtxt");
  ASSERT_TRUE(old.ok()) << old.status();
  const config::TaskConfig& config = old->config;
  EXPECT_EQ(config.model().decoder_input_hook(), kLeafAlignmentHook);
  EXPECT_FALSE(config.model().has_decoder_leaf_alignment());
  EXPECT_FALSE(config.model().has_decoder_leaf_alignment_last_piece());
  EXPECT_FALSE(config.decode().has_tag_dictionary_min_count());
  EXPECT_FALSE(config.decode().has_tag_dictionary_open_class());
  EXPECT_EQ(config.model().d_model(), 256);
  EXPECT_EQ(config.decode().beam_size(), 21);
  ASSERT_EQ(config.extensions_size(), 1);
  const parsing::ParsingConfig settings = ParsingSettings(config);
  EXPECT_TRUE(settings.leaf_alignment_last_piece());
  EXPECT_EQ(settings.tag_dictionary_min_count(), 5);
  EXPECT_TRUE(settings.tag_dictionary_open_class());

  // A --set of an old field is moved too; an existing extension keeps what
  // the old fields do not say.
  const std::string path = testing::WriteTempFile("both.pbtxt",
                                                  "task: \"parsing\"\n"
                                                  "extensions { [type.googleapis.com/"
                                                  "tfm.parsing.ParsingConfig] { "
                                                  "tag_dictionary_open_class: true } }\n");
  absl::StatusOr<LoadedConfig> loaded =
      LoadTaskConfig(path, {"decode.tag_dictionary_min_count=3"});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->config.extensions_size(), 1);
  EXPECT_EQ(ParsingSettings(loaded->config).tag_dictionary_min_count(), 3);
  EXPECT_TRUE(ParsingSettings(loaded->config).tag_dictionary_open_class());
  EXPECT_FALSE(loaded->config.decode().has_tag_dictionary_min_count());

  // A config that never set them is left as it is.
  absl::StatusOr<LoadedConfig> plain = ParseTaskConfig("task: \"parsing\"\n", "plain.pbtxt");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->config.has_model());
  EXPECT_FALSE(plain->config.has_decode());
  EXPECT_EQ(plain->config.extensions_size(), 0);
}

TEST(ParsingConfigTest, BadSettingsNameTheFileAndLine) {
  absl::StatusOr<LoadedConfig> negative = ParseTaskConfig(
      "task: \"parsing\"\n"
      "extensions { [type.googleapis.com/tfm.parsing.ParsingConfig] { "
      "tag_dictionary_min_count: -2 } }\n",
      "negative.pbtxt");
  ASSERT_TRUE(negative.ok()) << negative.status();
  const absl::Status status = CheckParsingConfig(*negative);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("negative.pbtxt:2"), std::string::npos) << status;
  EXPECT_NE(status.message().find("tag_dictionary_min_count: -2 is negative"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace tfm
