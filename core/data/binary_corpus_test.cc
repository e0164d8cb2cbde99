#include "core/data/binary_corpus.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/data/binary_corpus_writer.h"
#include "core/data/crc32c.h"
#include "core/data/shuffled_corpus_reader.h"
#include "core/data/token_batcher.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

constexpr uint64_t kVocabularyChecksum = 0x1234;
constexpr uint64_t kDataChecksum = 0x5678;

std::string TempPath(const std::string& name) {
  return absl::StrCat(::testing::TempDir(), "/", name);
}

// Pair i: source of 1 + i % 23 ids and target of 1 + i % 17, every id
// derived from i, each side ending in eos = 1.
std::vector<Example> ToyExamples(int n, int vocab_size) {
  std::vector<Example> examples(n);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < i % 23; ++k)
      examples[i].source.push_back(2 + (i * 31 + k) % (vocab_size - 2));
    for (int k = 0; k < i % 17; ++k)
      examples[i].target.push_back(2 + (i * 17 + k) % (vocab_size - 2));
    examples[i].source.push_back(1);
    examples[i].target.push_back(1);
  }
  return examples;
}

void WriteCorpus(const std::string& path, const std::vector<Example>& examples, int vocab_size) {
  auto writer = BinaryCorpusWriter::Create(path, vocab_size, kVocabularyChecksum, kDataChecksum);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const Example& example : examples) ASSERT_TRUE((*writer)->Add(example).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
}

BinaryCorpusExpectation Expect(int vocab_size) {
  return {vocab_size, kVocabularyChecksum, kDataChecksum};
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

bool Exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

TEST(BinaryCorpusTest, RoundTripsInBothIdWidths) {
  for (const int vocab_size : {8000, 70000}) {
    const std::string path = TempPath(absl::StrCat("round_trip_", vocab_size, ".bin"));
    const std::vector<Example> examples = ToyExamples(500, vocab_size);
    WriteCorpus(path, examples, vocab_size);
    auto corpus = BinaryCorpus::Open(path, Expect(vocab_size));
    ASSERT_TRUE(corpus.ok()) << corpus.status();
    EXPECT_EQ((*corpus)->token_bytes(), vocab_size <= 65536 ? 2u : 4u);
    ASSERT_EQ((*corpus)->size(), 500);
    Example read;
    for (int i = 0; i < 500; ++i) {
      ASSERT_TRUE((*corpus)->Read(i, &read).ok());
      EXPECT_EQ(read.source, examples[i].source) << "pair " << i;
      EXPECT_EQ(read.target, examples[i].target) << "pair " << i;
    }
    EXPECT_TRUE(absl::IsOutOfRange((*corpus)->Read(500, &read)));
  }
}

TEST(BinaryCorpusTest, WriterLeavesNothingUntilFinished) {
  const std::string path = TempPath("unfinished.bin");
  {
    auto writer = BinaryCorpusWriter::Create(path, 100, kVocabularyChecksum, kDataChecksum);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Add(ToyExamples(3, 100)[2]).ok());
    EXPECT_FALSE(Exists(path));
    const absl::Status bad = (*writer)->Add({{5, 100}, {1}});
    EXPECT_TRUE(absl::IsInvalidArgument(bad));
    EXPECT_NE(bad.message().find("token id 100 outside the vocabulary"), std::string::npos) << bad;
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(absl::StrCat(path, ".tmp.", getpid())));
}

class DamagedCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = TempPath("damaged.bin");
    WriteCorpus(path_, ToyExamples(50, 1000), 1000);
    bytes_ = ReadAll(path_);
  }

  absl::Status OpenWith(const std::string& bytes, BinaryCorpusExpectation expected = Expect(1000)) {
    WriteAll(path_, bytes);
    return BinaryCorpus::Open(path_, expected).status();
  }

  BinaryCorpusHeader Header() const {
    BinaryCorpusHeader header;
    std::memcpy(&header, bytes_.data(), sizeof(header));
    return header;
  }

  size_t IndexStart() const {
    return sizeof(BinaryCorpusHeader) + AlignedTokenBytes(Header().tokens, Header().token_bytes);
  }

  // The index entry of pair `i` replaced, its checksum made right again.
  std::string WithEntry(int i, BinaryCorpusIndexEntry entry) const {
    std::string bytes = bytes_;
    std::memcpy(&bytes[IndexStart() + i * sizeof(entry)], &entry, sizeof(entry));
    BinaryCorpusHeader header = Header();
    header.index_checksum = Fnv1a64(absl::string_view(bytes).substr(IndexStart()));
    std::memcpy(&bytes[0], &header, sizeof(header));
    return bytes;
  }

  static void ExpectError(const absl::Status& status, const std::string& what) {
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("damaged.bin"), std::string::npos) << status;
    EXPECT_NE(status.message().find(what), std::string::npos) << status;
  }

  std::string path_;
  std::string bytes_;
};

TEST_F(DamagedCorpusTest, IntactOpens) { EXPECT_TRUE(OpenWith(bytes_).ok()); }

TEST_F(DamagedCorpusTest, WrongMagic) {
  std::string bytes = bytes_;
  bytes[0] = 'X';
  ExpectError(OpenWith(bytes), "wrong magic");
  ExpectError(OpenWith("short"), "shorter than the 64-byte header");
}

TEST_F(DamagedCorpusTest, Truncated) {
  const absl::Status status = OpenWith(bytes_.substr(0, bytes_.size() - 7));
  ExpectError(status, absl::StrCat("truncated or damaged: ", bytes_.size() - 7, " bytes"));
  EXPECT_TRUE(absl::IsDataLoss(status));
}

TEST_F(DamagedCorpusTest, OtherVocabularyOrData) {
  ExpectError(OpenWith(bytes_, {1000, kVocabularyChecksum + 1, kDataChecksum}),
              "made with another vocabulary");
  ExpectError(OpenWith(bytes_, {999, kVocabularyChecksum, kDataChecksum}),
              "made with another vocabulary");
  ExpectError(OpenWith(bytes_, {1000, kVocabularyChecksum, kDataChecksum + 1}),
              "made from other data.train corpora");
}

TEST_F(DamagedCorpusTest, IndexChecksum) {
  std::string bytes = bytes_;
  bytes[IndexStart() + 3] ^= 1;
  ExpectError(OpenWith(bytes), "does not match its checksum");
}

TEST_F(DamagedCorpusTest, IndexOutOfRange) {
  ExpectError(OpenWith(WithEntry(7, {Header().tokens - 2, 2, 1})), "pair 7: tokens");
  ExpectError(OpenWith(WithEntry(9, {0, 0xFFFFFFFFu, 0xFFFFFFFFu})), "pair 9: tokens");
}

// Any changed id, even to another valid one, fails the ids' checksum when
// the file is opened.
TEST_F(DamagedCorpusTest, TokenChecksum) {
  std::string bytes = bytes_;
  bytes[sizeof(BinaryCorpusHeader) + 2 * 6] ^= 1;  // Still an id of the vocabulary.
  ExpectError(OpenWith(bytes), "the token ids (bytes 64..");
  ExpectError(OpenWith(bytes), ") do not match their checksum");
  EXPECT_TRUE(absl::IsDataLoss(OpenWith(bytes)));
}

TEST_F(DamagedCorpusTest, OlderVersionIsRefusedNamingTheCommand) {
  std::string bytes = bytes_;
  BinaryCorpusHeader header = Header();
  header.version = 1;
  std::memcpy(&bytes[0], &header, sizeof(header));
  ExpectError(OpenWith(bytes), "version 1, this build reads 2; run preprocess again");
}

TEST_F(DamagedCorpusTest, BadIdIsFoundWhenReadNamingTheByte) {
  std::string bytes = bytes_;
  // Pair 0 holds ids 0-1, pair 1 ids 2-5: id 6 is pair 2's first. The ids'
  // checksum made right again, as a writer with a bug would.
  const size_t byte = sizeof(BinaryCorpusHeader) + 2 * 6;
  bytes[byte] = '\xff';
  bytes[byte + 1] = '\xff';
  BinaryCorpusHeader header = Header();
  header.tokens_crc32c = Crc32c(absl::string_view(bytes).substr(
      sizeof(BinaryCorpusHeader), header.tokens * header.token_bytes));
  std::memcpy(&bytes[0], &header, sizeof(header));
  WriteAll(path_, bytes);
  auto corpus = BinaryCorpus::Open(path_, Expect(1000));
  ASSERT_TRUE(corpus.ok()) << corpus.status();  // Ids are checked as they are read.
  Example example;
  const absl::Status status = (*corpus)->Read(2, &example);
  EXPECT_TRUE(absl::IsDataLoss(status));
  ExpectError(status, absl::StrCat("pair 2: token id 65535 at byte ", byte));
}

TEST(EpochPermutationTest, IsAPermutationReproducibleAndNewEachEpoch) {
  const std::vector<uint32_t> first = EpochPermutation(10000, 7, 0);
  std::vector<uint32_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < sorted.size(); ++i) ASSERT_EQ(sorted[i], i);
  EXPECT_EQ(first, EpochPermutation(10000, 7, 0));
  EXPECT_NE(first, EpochPermutation(10000, 7, 1));
  EXPECT_NE(first, EpochPermutation(10000, 8, 0));
  // Global: the first tenth of the order draws from the whole corpus.
  int from_last_half = 0;
  for (int i = 0; i < 1000; ++i) from_last_half += first[i] >= 5000;
  EXPECT_GT(from_last_half, 400);
  EXPECT_LT(from_last_half, 600);
}

// A pair read in the shuffled order names the file and its place there.
TEST(ShuffledCorpusReaderTest, WhereNamesTheFileAndPair) {
  const std::string path = TempPath("where.bin");
  WriteCorpus(path, ToyExamples(50, 500), 500);
  auto opened = BinaryCorpus::Open(path, Expect(500));
  ASSERT_TRUE(opened.ok());
  ShuffledCorpusReader reader(*std::move(opened), 3, 0);
  EXPECT_EQ(reader.Where(), "");
  const std::vector<uint32_t> order = EpochPermutation(50, 3, 0);
  Example example;
  ASSERT_TRUE(*reader.Next(&example));
  EXPECT_EQ(reader.Where(), absl::StrCat(path, " pair ", order[0]));
  ASSERT_TRUE(*reader.Next(&example));
  EXPECT_EQ(reader.Where(), absl::StrCat(path, " pair ", order[1]));
}

config::BatchingConfig ToyBatching() {
  config::BatchingConfig config;
  config.set_max_source_tokens(120);
  config.set_max_target_tokens(120);
  config.set_max_length(20);
  config.set_min_length(2);
  config.set_shuffle_buffer(100);
  config.set_shuffle_seed(3);
  return config;
}

TokenBatcher BinaryBatcher(std::shared_ptr<const BinaryCorpus> corpus) {
  const uint64_t seed = ToyBatching().shuffle_seed();
  return TokenBatcher(
      ToyBatching(),
      [corpus, seed](int64_t epoch) -> absl::StatusOr<std::unique_ptr<ExampleReader>> {
        return std::unique_ptr<ExampleReader>(new ShuffledCorpusReader(corpus, seed, epoch));
      },
      /*pad_id=*/0);
}

std::vector<std::vector<int>> Epoch(TokenBatcher* batcher) {
  std::vector<std::vector<int>> batches;
  Batch batch;
  while (true) {
    absl::StatusOr<bool> more = batcher->Next(&batch);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return batches;
    batches.push_back(batch.source);
  }
}

TEST(BinaryBatchingTest, EpochsDifferAndResumeMidEpochIsExact) {
  const std::string path = TempPath("batching.bin");
  WriteCorpus(path, ToyExamples(1000, 500), 500);
  auto opened = BinaryCorpus::Open(path, Expect(500));
  ASSERT_TRUE(opened.ok());
  std::shared_ptr<const BinaryCorpus> corpus = *std::move(opened);

  TokenBatcher batcher = BinaryBatcher(corpus);
  const std::vector<std::vector<int>> epoch0 = Epoch(&batcher);
  const std::vector<std::vector<int>> epoch1 = Epoch(&batcher);
  ASSERT_GT(epoch0.size(), 20u);
  EXPECT_NE(epoch0, epoch1);
  // Every kept pair exactly once per epoch: the first id of each row is
  // distinct enough to compare the multisets of rows' ids.
  auto tokens = [](const std::vector<std::vector<int>>& batches) {
    std::multiset<int> ids;
    for (const auto& b : batches) ids.insert(b.begin(), b.end());
    ids.erase(0);
    return ids;
  };
  EXPECT_EQ(tokens(epoch0), tokens(epoch1));

  // Stop after 13 batches of epoch 1 (inside its second window), resume in
  // a new batcher: the rest is the same.
  TokenBatcher first = BinaryBatcher(corpus);
  Epoch(&first);
  Batch batch;
  for (int i = 0; i < 13; ++i) ASSERT_TRUE(*first.Next(&batch));
  const BatchPosition saved = first.position();
  EXPECT_GT(saved.pairs, 0);
  TokenBatcher resumed = BinaryBatcher(corpus);
  resumed.Seek(saved);
  const std::vector<std::vector<int>> rest = Epoch(&resumed);
  EXPECT_EQ(rest, std::vector<std::vector<int>>(epoch1.begin() + 13, epoch1.end()));
}

TEST(BinaryBatchingTest, CancelStopsAWindowAndSeekResumes) {
  const std::string path = TempPath("cancel.bin");
  WriteCorpus(path, ToyExamples(1000, 500), 500);
  auto opened = BinaryCorpus::Open(path, Expect(500));
  ASSERT_TRUE(opened.ok());
  std::shared_ptr<const BinaryCorpus> corpus = *std::move(opened);
  TokenBatcher reference = BinaryBatcher(corpus);
  const std::vector<std::vector<int>> epoch = Epoch(&reference);

  TokenBatcher batcher = BinaryBatcher(corpus);
  batcher.Cancel();
  Batch batch;
  EXPECT_TRUE(absl::IsCancelled(batcher.Next(&batch).status()));
  batcher.Seek(BatchPosition{});
  EXPECT_EQ(Epoch(&batcher), epoch);
}

}  // namespace
}  // namespace tfm
