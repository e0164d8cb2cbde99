#include "core/data/tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "core/data/aligned_text_reader.h"
#include "core/data/file_io.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

config::TokenizerConfig SmallConfig(config::TokenizerConfig::ModelType type) {
  config::TokenizerConfig config;
  config.set_model_type(type);
  config.set_vocab_size(2000);
  config.set_seed(7);
  // Fewer sentences than the validation files hold, so the seeded sampling
  // is exercised too.
  config.set_input_sentence_size(1500);
  return config;
}

std::vector<std::string> ValFiles() {
  return {SharedDataPath("multi30k/val.en.gz"), SharedDataPath("multi30k/val.de.gz")};
}

class TokenizerTest : public ::testing::TestWithParam<config::TokenizerConfig::ModelType> {};

TEST_P(TokenizerTest, TrainingIsDeterministicAndIdsAreFixed) {
  auto first = Tokenizer::TrainOnFiles(SmallConfig(GetParam()), ValFiles());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Tokenizer::TrainOnFiles(SmallConfig(GetParam()), ValFiles());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->model(), second->model()) << "same seed and input, different model";
  // For comparing runs (processes): the same on every run of this binary.
  std::cout << "model bytes " << first->model().size() << ", hash "
            << std::hash<std::string>()(first->model()) << "\n";
  EXPECT_EQ(first->vocab_size(), 2000);
  EXPECT_EQ(first->pad_id(), 0);
  EXPECT_EQ(first->unk_id(), 1);
  EXPECT_EQ(first->bos_id(), 2);
  EXPECT_EQ(first->eos_id(), 3);
  for (int id = 0; id < first->vocab_size(); ++id) {
    ASSERT_EQ(first->IdToPiece(id), second->IdToPiece(id));
  }
}

TEST_P(TokenizerTest, EncodeDecodeRoundTripsAndSaveLoadKeepsTheModel) {
  auto tokenizer = Tokenizer::TrainOnFiles(SmallConfig(GetParam()), ValFiles());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::string text = "Ein Mann schläft in einem grünen Raum auf einem Sofa.";
  const std::vector<int> ids = tokenizer->Encode(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_LT(ids.size(), 30u);
  for (int id : ids) EXPECT_GT(id, 3);  // No specials inside a sentence.
  auto decoded = tokenizer->Decode(ids);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, text);
  std::vector<int> framed = {tokenizer->bos_id()};
  framed.insert(framed.end(), ids.begin(), ids.end());
  framed.push_back(tokenizer->eos_id());
  framed.push_back(tokenizer->pad_id());
  EXPECT_EQ(*tokenizer->Decode(framed), text);
  EXPECT_FALSE(tokenizer->Decode({5, 2000}).ok());
  EXPECT_FALSE(tokenizer->Decode({-1}).ok());

  const std::string path = absl::StrCat(std::getenv("TEST_TMPDIR"), "/spm.model");
  ASSERT_TRUE(tokenizer->Save(path).ok());
  auto loaded = Tokenizer::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model(), tokenizer->model());
  EXPECT_EQ(loaded->Encode(text), ids);
  // Nothing left beside the model: the temporary file was renamed.
  EXPECT_FALSE(ReadFileToString(path + ".tmp." + std::to_string(getpid())).ok());
}

INSTANTIATE_TEST_SUITE_P(ModelTypes, TokenizerTest,
                         ::testing::Values(config::TokenizerConfig::BPE,
                                           config::TokenizerConfig::UNIGRAM));

TEST(TokenizerErrorsTest, UserErrorsAreStatuses) {
  auto missing = Tokenizer::Load("/no/such/spm.model");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/no/such/spm.model"), std::string::npos);
  auto garbage = Tokenizer::Load(WriteTempFile("garbage.model", "not a model"));
  EXPECT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("garbage.model"), std::string::npos);
  auto no_file = Tokenizer::TrainOnFiles(SmallConfig(config::TokenizerConfig::BPE),
                                         {"/no/such/train.en"});
  EXPECT_EQ(no_file.status().code(), absl::StatusCode::kNotFound);
  config::TokenizerConfig too_big = SmallConfig(config::TokenizerConfig::BPE);
  too_big.set_vocab_size(100000);  // More pieces than the text can give.
  EXPECT_FALSE(Tokenizer::TrainOnFiles(too_big, ValFiles()).ok());
}

TEST(TokenizerErrorsTest, TrainsOnPairsWithASharedVocabulary) {
  auto reader = AlignedTextReader::Open(SharedDataPath("multi30k/val.en.gz"),
                                        SharedDataPath("multi30k/val.fr.gz"));
  ASSERT_TRUE(reader.ok());
  auto tokenizer =
      Tokenizer::TrainOnPairs(SmallConfig(config::TokenizerConfig::BPE), reader->get());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  // Both languages are covered: neither side falls back to unknown pieces.
  for (const char* text : {"A man is sleeping.", "Un homme dort."}) {
    for (int id : tokenizer->Encode(text)) EXPECT_NE(id, tokenizer->unk_id()) << text;
  }
}

}  // namespace
}  // namespace tfm
