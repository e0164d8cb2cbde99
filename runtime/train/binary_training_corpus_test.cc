#include "runtime/train/binary_training_corpus.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/data/binary_corpus.h"
#include "core/data/binary_corpus_format.h"
#include "core/data/crc32c.h"
#include "core/data/token_batcher.h"
#include "core/thread_pool.h"
#include "gtest/gtest.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_testing.h"

namespace tfm {
namespace {

struct Prepared {
  config::DataConfig data;
  Tokenizer tokenizer;
  std::string path;
  PreprocessSummary summary;
};

Prepared Prepare(const std::string& name, int max_length = 256) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  EXPECT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  config::DataConfig data = testing::WriteToyCorpus(dir);
  data.mutable_batching()->set_max_length(max_length);
  absl::StatusOr<Tokenizer> tokenizer = LoadOrTrainTokenizer(data, dir, nullptr);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::string path = BinaryTrainingCorpusPath(data, dir);
  absl::StatusOr<PreprocessSummary> summary = WriteBinaryTrainingCorpus(data, *tokenizer, path);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return {data, *std::move(tokenizer), path, *summary};
}

// Every pair of an epoch of `batches`, as its source and target ids.
std::multiset<std::vector<int>> Rows(BatchStream* batches) {
  std::multiset<std::vector<int>> rows;
  Batch batch;
  while (true) {
    absl::StatusOr<bool> more = batches->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return rows;
    for (int r = 0; r < batch.size; ++r) {
      std::vector<int> row(
          batch.source.begin() + r * batch.source_length,
          batch.source.begin() + r * batch.source_length + batch.source_lengths[r]);
      row.insert(row.end(), batch.target.begin() + r * batch.target_length,
                 batch.target.begin() + r * batch.target_length + batch.target_lengths[r]);
      rows.insert(row);
    }
  }
}

// Relative to the work directory; an absolute setting is used as given (it
// was put under the work directory, and training then read the text).
TEST(BinaryTrainingCorpusTest, AnAbsolutePathIsUsedAsGiven) {
  config::DataConfig data;
  EXPECT_EQ(BinaryTrainingCorpusPath(data, "/w"), "/w/train_corpus.bin");
  data.set_binary_train_path("corpora/ende.bin");
  EXPECT_EQ(BinaryTrainingCorpusPath(data, "/w"), "/w/corpora/ende.bin");
  data.set_binary_train_path("/shared/ende.bin");
  EXPECT_EQ(BinaryTrainingCorpusPath(data, "/w"), "/shared/ende.bin");
}

TEST(BinaryTrainingCorpusTest, HoldsTheTextPathsIdsInCorpusOrder) {
  const Prepared p = Prepare("round_trip");
  auto corpus = BinaryCorpus::Open(p.path, {p.tokenizer.vocab_size(), Fnv1a64(p.tokenizer.model()),
                                            TrainingDataChecksum(p.data)});
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(p.summary.pairs, 60);
  EXPECT_EQ((*corpus)->size(), 60);
  EXPECT_EQ((*corpus)->token_bytes(), kTokenBytesUint16);
  auto text = OpenCorpora(p.data.train(), "data.train");
  ASSERT_TRUE(text.ok());
  const MakeExample make = TokenizeWithEos(p.tokenizer);
  SentencePair pair;
  Example stored;
  for (int i = 0; i < 60; ++i) {
    ASSERT_TRUE(*(*text)->Next(&pair));
    const Example expected = make(pair);
    ASSERT_TRUE((*corpus)->Read(i, &stored).ok());
    EXPECT_EQ(stored.source, expected.source) << "pair " << i;
    EXPECT_EQ(stored.target, expected.target) << "pair " << i;
  }
  EXPECT_FALSE(*(*text)->Next(&pair));
}

TEST(BinaryTrainingCorpusTest, SameFileWhateverTheThreadCount) {
  const Prepared p = Prepare("threads");
  std::string files[2];
  for (const int threads : {1, 3}) {
    ThreadPool pool(threads);
    ThreadPool::ScopedDefault scoped(&pool);
    const std::string path = absl::StrCat(p.path, ".", threads);
    ASSERT_TRUE(WriteBinaryTrainingCorpus(p.data, p.tokenizer, path).ok());
    std::ifstream in(path, std::ios::binary);
    files[threads == 3].assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_GT(files[0].size(), 64u);
  EXPECT_EQ(files[0], files[1]);
}

TEST(BinaryTrainingCorpusTest, TrainingBatchesHoldTheSamePairsAsFromText) {
  const Prepared p = Prepare("same_pairs");
  std::ostringstream log;
  auto text = OpenTrainingBatches(p.data, p.tokenizer, "", log);
  auto binary = OpenTrainingBatches(p.data, p.tokenizer, p.path, log);
  ASSERT_TRUE(text.ok() && binary.ok()) << binary.status();
  EXPECT_NE(log.str().find("60 pairs"), std::string::npos) << log.str();
  const std::multiset<std::vector<int>> from_text = Rows(text->get());
  EXPECT_EQ(from_text.size(), 60u);
  EXPECT_EQ(Rows(binary->get()), from_text);
  EXPECT_EQ(Rows(binary->get()), from_text);  // The second epoch too.
}

TEST(BinaryTrainingCorpusTest, LengthLimitsAreAppliedAndChecked) {
  const Prepared p = Prepare("length_limits", /*max_length=*/6);
  EXPECT_LT(p.summary.pairs, 60);
  EXPECT_EQ(p.summary.pairs + p.summary.skips.count(kSkipTooManyTokens), 60);
  config::DataConfig other = p.data;
  other.mutable_batching()->set_max_length(7);
  std::ostringstream log;
  auto refused = OpenTrainingBatches(other, p.tokenizer, p.path, log);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status()));
  EXPECT_NE(refused.status().message().find("run preprocess again"), std::string::npos)
      << refused.status();
}

TEST(BinaryTrainingCorpusTest, AnotherVocabularyIsRefused) {
  const Prepared p = Prepare("vocabulary");
  std::ostringstream log;
  // A tokenizer trained to another size on the same text.
  config::DataConfig data = p.data;
  data.mutable_tokenizer()->set_vocab_size(data.tokenizer().vocab_size() + 5);
  data.mutable_tokenizer()->set_model_path("other.model");
  absl::StatusOr<Tokenizer> other =
      LoadOrTrainTokenizer(data, ::testing::TempDir() + "/vocabulary", nullptr);
  ASSERT_TRUE(other.ok()) << other.status();
  auto refused = OpenTrainingBatches(p.data, *other, p.path, log);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("made with another vocabulary"), std::string::npos)
      << refused.status();
}

// The text of every row of `rows` (source and target ids, decoded as one).
std::multiset<std::string> Texts(const Tokenizer& tokenizer,
                                 const std::multiset<std::vector<int>>& rows) {
  std::multiset<std::string> texts;
  for (const std::vector<int>& row : rows) texts.insert(*tokenizer.Decode(row));
  return texts;
}

// BPE-dropout, from text or from the binary corpus: each epoch holds the
// same pairs' text split otherwise, anew each epoch, the same on every run,
// and the same after a seek into the epoch (an exact resume).
TEST(BinaryTrainingCorpusTest, BpeDropoutSplitsEachEpochAnewAndRepeats) {
  const Prepared p = Prepare("bpe_dropout");
  config::DataConfig dropped = p.data;
  dropped.mutable_tokenizer()->set_bpe_dropout(0.5f);
  for (const std::string& path : {std::string(), p.path}) {
    SCOPED_TRACE(path.empty() ? "from text" : "from the binary corpus");
    std::ostringstream log;
    // Without the background thread, so that the pools below are the only
    // ones splitting.
    dropped.mutable_batching()->set_prefetch_batches(0);
    auto plain = OpenTrainingBatches(p.data, p.tokenizer, path, log);
    auto first = OpenTrainingBatches(dropped, p.tokenizer, path, log);
    auto second = OpenTrainingBatches(dropped, p.tokenizer, path, log);
    ASSERT_TRUE(plain.ok() && first.ok() && second.ok()) << first.status();
    EXPECT_NE(log.str().find("BPE-dropout 0.5"), std::string::npos) << log.str();
    const std::multiset<std::vector<int>> vocabulary_splits = Rows(plain->get());
    std::multiset<std::vector<int>> epoch0, epoch1;
    {
      ThreadPool pool(1);
      ThreadPool::ScopedDefault scoped(&pool);
      epoch0 = Rows(first->get());
      epoch1 = Rows(first->get());
    }
    {
      // The window split by three threads: the same batches.
      ThreadPool pool(3);
      ThreadPool::ScopedDefault scoped(&pool);
      EXPECT_EQ(Rows(second->get()), epoch0);
    }
    EXPECT_NE(epoch0, vocabulary_splits);
    EXPECT_NE(epoch1, epoch0);
    EXPECT_EQ(Texts(p.tokenizer, epoch0), Texts(p.tokenizer, vocabulary_splits));
    EXPECT_EQ(Texts(p.tokenizer, epoch1), Texts(p.tokenizer, vocabulary_splits));

    // Epoch 2, three batches in: a stream that seeks there continues alike.
    Batch batch;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(*(*first)->Next(&batch));
    const BatchPosition position = (*first)->position();
    auto resumed = OpenTrainingBatches(dropped, p.tokenizer, path, log);
    ASSERT_TRUE(resumed.ok());
    (*resumed)->Seek(position);
    EXPECT_EQ(Rows(resumed->get()), Rows(first->get()));
  }
}

TEST(BinaryTrainingCorpusTest, BpeDropoutNeedsABpeVocabulary) {
  const Prepared p = Prepare("bpe_dropout_unigram");
  config::DataConfig unigram = p.data;
  unigram.mutable_tokenizer()->set_model_type(config::TokenizerConfig::UNIGRAM);
  unigram.mutable_tokenizer()->set_model_path("unigram.model");
  absl::StatusOr<Tokenizer> tokenizer =
      LoadOrTrainTokenizer(unigram, ::testing::TempDir() + "/bpe_dropout_unigram", nullptr);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  unigram.mutable_tokenizer()->set_bpe_dropout(0.1f);
  std::ostringstream log;
  auto refused = OpenTrainingBatches(unigram, *tokenizer, "", log);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("data.tokenizer.bpe_dropout: BPE-dropout needs a BPE "
                                            "vocabulary"),
            std::string::npos)
      << refused.status();
}

// A corpus damaged after it was checked at start (an id outside the
// vocabulary) stops training when the background thread reaches it, naming
// the file, the pair and the byte.
TEST(BinaryTrainingCorpusTest, DamageFoundMidEpochIsAnErrorNamingTheByte) {
  const Prepared p = Prepare("damaged");
  std::string bytes;
  {
    std::ifstream in(p.path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t byte = sizeof(BinaryCorpusHeader) + 2 * 100;  // Some pair's id, as uint16.
  bytes[byte] = '\xff';
  bytes[byte + 1] = '\xff';
  std::ofstream(p.path, std::ios::binary | std::ios::trunc) << bytes;
  std::ostringstream log;
  // Damage is found when the file opens: the ids' checksum.
  const auto refused = OpenTrainingBatches(p.data, p.tokenizer, p.path, log);
  EXPECT_TRUE(absl::IsDataLoss(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("do not match their checksum"), std::string::npos)
      << refused.status();
  // An id out of the vocabulary under a checksum that holds (a writer's
  // bug): found as it is read, naming the byte.
  BinaryCorpusHeader header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  header.tokens_crc32c = Crc32c(absl::string_view(bytes).substr(
      sizeof(BinaryCorpusHeader), header.tokens * header.token_bytes));
  std::memcpy(&bytes[0], &header, sizeof(header));
  std::ofstream(p.path, std::ios::binary | std::ios::trunc) << bytes;
  auto batches = OpenTrainingBatches(p.data, p.tokenizer, p.path, log);
  ASSERT_TRUE(batches.ok()) << batches.status();
  Batch batch;
  absl::Status status;
  for (int i = 0; i < 100 && status.ok(); ++i) status = (*batches)->Next(&batch).status();
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_NE(status.message().find(p.path + ": pair "), std::string::npos) << status;
  EXPECT_NE(status.message().find(absl::StrCat("token id 65535 at byte ", byte)),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace tfm
