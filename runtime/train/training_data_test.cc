#include "runtime/train/training_data.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/train/training_testing.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

std::string TempDir() { return ::testing::TempDir(); }

TEST(TrainingDataTest, TokenizerIsTrainedOnceThenReused) {
  const std::string dir = TempDir() + "/tokenizer_once";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const config::DataConfig data = testing::WriteToyCorpus(dir);
  std::ostringstream log;
  absl::StatusOr<Tokenizer> trained = LoadOrTrainTokenizer(data, dir + "/work", &log);
  ASSERT_TRUE(trained.ok()) << trained.status();
  EXPECT_NE(log.str().find("training 40 pieces"), std::string::npos) << log.str();
  std::ostringstream second_log;
  absl::StatusOr<Tokenizer> loaded = LoadOrTrainTokenizer(data, dir + "/work", &second_log);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(second_log.str().find("training"), std::string::npos) << second_log.str();
  EXPECT_EQ(loaded->model(), trained->model());
}

TEST(TrainingDataTest, BatchesDecodeBackToTheCorpus) {
  const std::string dir = TempDir() + "/batches";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const config::DataConfig data = testing::WriteToyCorpus(dir);
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, dir, nullptr);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  std::unique_ptr<TokenBatcher> batcher = MakeTrainingBatcher(data, *tokenizer);
  Batch batch;
  int64_t rows = 0;
  while (*batcher->Next(&batch)) rows += batch.size;
  EXPECT_EQ(rows, 60);
  absl::StatusOr<std::vector<Batch>> valid = LoadValidationBatches(data, *tokenizer);
  ASSERT_TRUE(valid.ok()) << valid.status();
  std::multiset<std::string> sources;
  for (const Batch& b : *valid) {
    for (int r = 0; r < b.size; ++r) {
      const int* row = b.source.data() + r * b.source_length;
      sources.insert(*tokenizer->Decode({row, static_cast<size_t>(b.source_lengths[r])}));
    }
  }
  EXPECT_EQ(sources, (std::multiset<std::string>{"the cat sees the dog",
                                                 "the cat sees the cat",
                                                 "the cat sees the horse"}));
}

// The tokenizer's pass over the corpus says which pairs every epoch will
// leave out, naming the file and line of the first ones.
TEST(TrainingDataTest, TheFirstPassReportsSkippedPairsWithTheirPlace) {
  const std::string dir = TempDir() + "/skipped_pairs";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const config::DataConfig data = testing::WriteToyCorpus(dir);
  {
    std::ofstream en(dir + "/train.en", std::ios::app), de(dir + "/train.de", std::ios::app);
    en << "the dog \xff\xfe sees\n";
    de << "die Hund sieht\n";
  }
  std::ostringstream log;
  ASSERT_TRUE(LoadOrTrainTokenizer(data, dir + "/work", &log).ok());
  EXPECT_NE(log.str().find("data.train: skipped 1 record: 1 invalid utf-8 (" + dir +
                           "/train.en:61)"),
            std::string::npos)
      << log.str();
}

// SentencePiece's failures come back naming the corpus and the setting.
TEST(TrainingDataTest, VocabularyTrainingErrorsNameTheCorpusAndTheSetting) {
  const std::string dir = TempDir() + "/vocabulary_errors";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  config::DataConfig data = testing::WriteToyCorpus(dir);
  data.mutable_tokenizer()->set_vocab_size(100000);
  absl::Status status = LoadOrTrainTokenizer(data, dir + "/too_many", nullptr).status();
  EXPECT_NE(status.message().find("training data.tokenizer.vocab_size = 100000 pieces on "
                                  "data.train (" + dir + "/train.en)"),
            std::string::npos)
      << status;
  data.mutable_tokenizer()->set_vocab_size(40);
  { std::ofstream truncate_en(dir + "/train.en"), truncate_de(dir + "/train.de"); }
  status = LoadOrTrainTokenizer(data, dir + "/empty", nullptr).status();
  EXPECT_NE(status.message().find(dir + "/train.en): no sentence to train the vocabulary on"),
            std::string::npos)
      << status;
}

// A validation set given but empty is an error naming it, not a run that
// silently never validates.
TEST(TrainingDataTest, AnEmptyValidationSetIsAnError) {
  const std::string dir = TempDir() + "/empty_valid";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  const config::DataConfig data = testing::WriteToyCorpus(dir);
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, dir, nullptr);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  { std::ofstream truncate_en(dir + "/valid.en"), truncate_de(dir + "/valid.de"); }
  const absl::StatusOr<std::vector<Batch>> valid = LoadValidationBatches(data, *tokenizer);
  EXPECT_EQ(valid.status().code(), absl::StatusCode::kFailedPrecondition) << valid.status();
  EXPECT_NE(valid.status().message().find(dir + "/valid.en) yields no pair"), std::string::npos)
      << valid.status();
  config::DataConfig without = data;
  without.clear_valid();
  ASSERT_TRUE(LoadValidationBatches(without, *tokenizer).ok());
}

TEST(TrainingDataTest, MissingCorpusNamesTheField) {
  config::DataConfig data = testing::WriteToyCorpus(TempDir());
  data.mutable_train(0)->set_source_path("/no/such/train.en");
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, TempDir() + "/missing", nullptr);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_NE(tokenizer.status().message().find("data.train[0]"), std::string::npos)
      << tokenizer.status();
  EXPECT_NE(tokenizer.status().message().find("/no/such/train.en"), std::string::npos)
      << tokenizer.status();
}

}  // namespace
}  // namespace tfm
