#include "runtime/train/checkpoint_match.h"

#include <vector>

#include "runtime/train/checkpoint_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tfm::testing::SampleCheckpoint;
using ::tfm::testing::SentencePieceModelBytes;

constexpr char kConfigPath[] = "/w/checkpoint_000000100/config.pbtxt";
constexpr char kVocabularyPath[] = "/w/checkpoint_000000100/vocabulary.model";

TEST(CheckConfigMatchesTest, ModelChangeNamesFieldAndBothValues) {
  const config::TaskConfig stored = SampleCheckpoint(100).config;
  config::TaskConfig run = stored;
  run.mutable_model()->set_d_model(8);
  run.mutable_model()->set_num_encoder_layers(2);
  absl::Status status = CheckConfigMatches(stored, kConfigPath, run);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), AllOf(HasSubstr(kConfigPath), HasSubstr("model.d_model: 4 -> 8"),
                                      HasSubstr("model.num_encoder_layers")));
}

TEST(CheckConfigMatchesTest, TokenizerChangeIsAMismatch) {
  const config::TaskConfig stored = SampleCheckpoint(100).config;
  config::TaskConfig run = stored;
  run.mutable_data()->mutable_tokenizer()->set_eos_id(9);
  EXPECT_THAT(CheckConfigMatches(stored, kConfigPath, run).message(),
              HasSubstr("data.tokenizer.eos_id"));
}

TEST(CheckConfigMatchesTest, TrainingSettingsPathsAndSpelledOutDefaultsMayDiffer) {
  const config::TaskConfig stored = SampleCheckpoint(100).config;
  config::TaskConfig run = stored;
  run.mutable_train()->set_max_steps(5);
  run.mutable_data()->set_work_dir("/elsewhere");
  run.mutable_data()->mutable_tokenizer()->set_model_path("/elsewhere/spm.model");
  run.mutable_data()->mutable_tokenizer()->set_bpe_dropout(0.1f);  // How pairs are split.
  run.mutable_model()->set_d_ff(2048);  // The default, now explicit.
  EXPECT_TRUE(CheckConfigMatches(stored, kConfigPath, run).ok());
}

TEST(CheckVocabularyMatchesTest, SamePiecesMatch) {
  const std::string vocabulary = SentencePieceModelBytes({"<pad>", "▁the"});
  EXPECT_TRUE(CheckVocabularyMatches(vocabulary, kVocabularyPath, vocabulary, "spm.model").ok());
}

TEST(CheckVocabularyMatchesTest, SaysHowVocabulariesDiffer) {
  const std::string stored = SentencePieceModelBytes({"<pad>", "▁the", "▁a"});
  absl::Status count = CheckVocabularyMatches(
      stored, kVocabularyPath, SentencePieceModelBytes({"<pad>", "▁the"}), "run/spm.model");
  EXPECT_EQ(count.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.message(), AllOf(HasSubstr(kVocabularyPath), HasSubstr("run/spm.model"),
                                     HasSubstr("3 pieces in the checkpoint, 2 in the run")));
  EXPECT_THAT(CheckVocabularyMatches(stored, kVocabularyPath,
                                     SentencePieceModelBytes({"<pad>", "▁an", "▁a"}), "spm.model")
                  .message(),
              HasSubstr("piece 1 is \"▁the\" in the checkpoint, \"▁an\" in the run"));
  EXPECT_THAT(
      CheckVocabularyMatches(stored, kVocabularyPath, stored + std::string("\x10\x01", 2), "x")
          .message(),
      HasSubstr("the same 3 pieces"));
  EXPECT_THAT(
      CheckVocabularyMatches(stored, kVocabularyPath, "\xff\xff not a model", "x").message(),
      HasSubstr("not both readable"));
}

TEST(AssignTensorsTest, CopiesByNameWhateverTheOrder) {
  const NamedTensors source = SampleCheckpoint(1, 2.0f).model;
  NamedTensors destination = {
      {source[1].first, Tensor::Zeros(source[1].second.shape(), DType::kF32).value()},
      {source[0].first, Tensor::Zeros(source[0].second.shape(), DType::kF32).value()}};
  ASSERT_TRUE(AssignTensors(source, "model.safetensors", &destination).ok());
  EXPECT_EQ(destination[0].second.ToVector<float>(), source[1].second.ToVector<float>());
  EXPECT_EQ(destination[1].second.ToVector<float>(), source[0].second.ToVector<float>());
}

TEST(AssignTensorsTest, NamesMissingExtraAndMisshapenTensors) {
  const NamedTensors source = SampleCheckpoint(1).model;
  NamedTensors destination = {{source[0].first, Tensor::Zeros({4, 5}, DType::kF32).value()},
                              {"decoder.new.weight", Tensor::Zeros({2}, DType::kF32).value()}};
  const std::vector<float> before = destination[0].second.ToVector<float>();
  absl::Status status = AssignTensors(source, "ckpt/model.safetensors", &destination);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(
      status.message(),
      AllOf(HasSubstr("ckpt/model.safetensors"),
            HasSubstr("1 missing from the file: decoder.new.weight"),
            HasSubstr("1 in the file but not in the model: " + source[1].first),
            HasSubstr(source[0].first + " is f32[5, 4] in the file, f32[4, 5] in the model")));
  EXPECT_EQ(destination[0].second.ToVector<float>(), before);  // Nothing copied.
}

}  // namespace
}  // namespace tfm
