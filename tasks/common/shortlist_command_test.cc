// The shortlist command and decoding with its output, on a small random
// Transformer saved as training saves it, whose config's data.train is
// Multi30k's validation split.
#include "tasks/common/shortlist_command.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/decode/shortlist_file.h"
#include "tasks/common/random_model_testing.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/trained_model.h"
#include "tests/util/peer_python.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

class ShortlistCommandTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/shortlist_work"));
    config::TaskConfig config;
    config.set_task("translation");
    config::TokenizerConfig& tokenizer_config = *config.mutable_data()->mutable_tokenizer();
    tokenizer_config.set_vocab_size(500);
    tokenizer_config.set_seed(7);
    config.mutable_data()->mutable_batching()->set_max_length(64);
    config::CorpusConfig& train = *config.mutable_data()->add_train();
    train.set_format(config::CorpusConfig::PLAIN_TEXT);
    train.set_source_path(SharedDataPath("multi30k/val.en.gz"));
    train.set_target_path(SharedDataPath("multi30k/val.de.gz"));
    testing::SetTinyModelShape(*config.mutable_model());
    config.mutable_decode()->set_max_length_offset(10);
    absl::StatusOr<Tokenizer> tokenizer = Tokenizer::TrainOnFiles(
        tokenizer_config, {train.source_path(), train.target_path()});
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    ASSERT_TRUE(testing::WriteRandomModelCheckpoint(config, *tokenizer, *work_dir_, 5).ok());
    shortlist_ = new std::string(absl::StrCat(::testing::TempDir(), "/m30k_val.shortlist"));
    std::ostringstream log;
    const absl::Status learned = RunShortlistCommand(*work_dir_, *shortlist_, "", log);
    ASSERT_TRUE(learned.ok()) << learned;
    log_ = new std::string(log.str());
  }

  static std::string* work_dir_;
  static std::string* shortlist_;
  static std::string* log_;
};

std::string* ShortlistCommandTest::work_dir_ = nullptr;
std::string* ShortlistCommandTest::shortlist_ = nullptr;
std::string* ShortlistCommandTest::log_ = nullptr;

const std::vector<std::string> kLines = {"A dog runs through the snow.",
                                         "People walk down the street.",
                                         "Two men play football in the park."};

// The command counts every validation pair and writes a file for this
// model's vocabulary; a batch's candidates are a part of the vocabulary.
TEST_F(ShortlistCommandTest, LearnsFromTheSavedConfigsTrainingData) {
  // Training's length limit (max_length 64) applies as in training.
  EXPECT_NE(log_->find("1004 pairs counted; skipped 10 records: 10 longer than max_length"),
            std::string::npos)
      << *log_;
  // Each named by its file and line (the first three kept).
  EXPECT_NE(log_->find("longer than max_length (" + SharedDataPath("multi30k/val.en.gz") + ":"),
            std::string::npos)
      << *log_;
  absl::StatusOr<TrainedModel> trained = LoadTrainedModel(*work_dir_, Device::Cpu(), nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  absl::StatusOr<VocabularyShortlist> shortlist =
      LoadShortlist(*shortlist_, trained->tokenizer, /*frequent_count=*/50, /*best_count=*/10);
  ASSERT_TRUE(shortlist.ok()) << shortlist.status();
  const std::vector<int> source = trained->tokenizer.Encode(kLines[0]);
  const std::vector<int32_t> candidates = shortlist->Candidates(source, {3});
  EXPECT_GT(candidates.size(), 50u);
  EXPECT_LT(candidates.size(), 300u);
}

// --shortlist on every member of an ensemble; a shortlist that takes every
// token decodes as the whole vocabulary does (the learned one leaves out
// tokens never seen as targets, which a random model may well produce);
// --shortlist=none turns it off.
TEST_F(ShortlistCommandTest, DecodingWithTheShortlist) {
  absl::StatusOr<TrainedModel> trained =
      LoadTrainedModel(absl::StrCat(*work_dir_, ",", *work_dir_), Device::Cpu(), nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  DecodeRequest request;
  const config::DecodeConfig whole = *DecodeSettings(trained->config, request);
  absl::StatusOr<std::vector<std::string>> expected =
      DecodeLines(*trained, whole, kLines, "x", nullptr);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ShortlistTable every_token;
  every_token.vocabulary_size = trained->tokenizer.vocab_size();
  every_token.vocabulary_checksum = VocabularyChecksum(trained->tokenizer);
  for (int id = 0; id < every_token.vocabulary_size; ++id) every_token.frequent.push_back(id);
  const std::string all_path = absl::StrCat(::testing::TempDir(), "/every_token.shortlist");
  ASSERT_TRUE(WriteShortlistFile(all_path, every_token).ok());
  request.shortlist = all_path;
  request.shortlist_frequent = 500;
  const config::DecodeConfig everything = *DecodeSettings(trained->config, request);
  EXPECT_EQ(everything.shortlist(), all_path);
  std::ostringstream log;
  absl::StatusOr<std::vector<std::string>> got =
      DecodeLines(*trained, everything, kLines, "x", &log);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, *expected);
  EXPECT_NE(log.str().find("decoding with the shortlist"), std::string::npos) << log.str();
  ASSERT_NE(trained->model->shortlist(), nullptr);
  EXPECT_EQ(trained->other_members[0]->shortlist(), trained->model->shortlist());

  request.shortlist = *shortlist_;
  request.shortlist_frequent = 20;
  request.shortlist_best = 5;
  absl::StatusOr<std::vector<std::string>> small =
      DecodeLines(*trained, *DecodeSettings(trained->config, request), kLines, "x", nullptr);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(trained->model->shortlist()->frequent_count(), 20);

  request.shortlist = "none";
  const config::DecodeConfig off = *DecodeSettings(trained->config, request);
  EXPECT_TRUE(off.shortlist().empty());
  absl::StatusOr<std::vector<std::string>> back = DecodeLines(*trained, off, kLines, "x", nullptr);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *expected);
  EXPECT_EQ(trained->model->shortlist(), nullptr);
}

// A shortlist of another vocabulary, a damaged file, and a model whose
// config has no training data are clear errors naming what is wrong.
TEST_F(ShortlistCommandTest, BadShortlistsAreClearErrors) {
  absl::StatusOr<TrainedModel> trained = LoadTrainedModel(*work_dir_, Device::Cpu(), nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status();
  absl::StatusOr<ShortlistTable> table = ReadShortlistFile(*shortlist_);
  ASSERT_TRUE(table.ok()) << table.status();
  table->vocabulary_checksum ^= 1;
  const std::string other = absl::StrCat(::testing::TempDir(), "/other_vocabulary.shortlist");
  ASSERT_TRUE(WriteShortlistFile(other, *table).ok());
  config::DecodeConfig decode = trained->config.decode();
  decode.set_shortlist(other);
  absl::Status status = trained->SetShortlist(decode, nullptr);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(other), std::string::npos) << status;
  EXPECT_NE(status.message().find("the `shortlist` command"), std::string::npos) << status;

  decode.set_shortlist(absl::StrCat(::testing::TempDir(), "/missing.shortlist"));
  EXPECT_FALSE(trained->SetShortlist(decode, nullptr).ok());

  std::ostringstream log;
  status = RunShortlistCommand(*work_dir_, "", "", log);
  EXPECT_NE(status.message().find("--output=FILE"), std::string::npos) << status;
  status = RunShortlistCommand(*work_dir_, absl::StrCat(::testing::TempDir(), "/x.shortlist"),
                               "/nonexistent_data_dir", log);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("data.train"), std::string::npos) << status;
}

}  // namespace
}  // namespace tfm
