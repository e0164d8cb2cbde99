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
