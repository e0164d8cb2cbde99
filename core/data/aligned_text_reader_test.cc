#include "core/data/aligned_text_reader.h"

#include "core/data/pair_reader_testing.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::ReadPairs;
using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

TEST(AlignedTextReaderTest, SkipsBadPairsTogetherAndCountsReasons) {
  const std::string source = WriteTempFile(
      "bad.en", "good one\n\nbad \xFF utf8\nfine\n" + std::string(50, 'z') + "\nlast\n");
  const std::string target =
      WriteTempFile("bad.de", "gut eins\nleer links\nkaputt\n   \nlang\nletzte\n");
  auto reader = AlignedTextReader::Open(source, target, /*max_sentence_bytes=*/40);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto pairs = ReadPairs(reader->get());
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].source, "good one");
  EXPECT_EQ(pairs[0].target, "gut eins");
  EXPECT_EQ(pairs[1].source, "last");
  EXPECT_EQ(pairs[1].target, "letzte");
  const SkipReport& skips = (*reader)->skips();
  EXPECT_EQ(skips.count(kSkipEmpty), 2);  // Empty source; blank target.
  EXPECT_EQ(skips.count(kSkipInvalidUtf8), 1);
  EXPECT_EQ(skips.count(kSkipTooLong), 1);
  EXPECT_NE(skips.Summary().find("bad.en:3"), std::string::npos) << skips.Summary();
}

TEST(AlignedTextReaderTest, LineCountMismatchNamesBothFilesAndCounts) {
  const std::string source = WriteTempFile("short.en", "a\nb\n");
  const std::string target = WriteTempFile("long.de", "a\nb\nc\nd\ne\n");
  auto reader = AlignedTextReader::Open(source, target);
  ASSERT_TRUE(reader.ok());
  SentencePair pair;
  absl::Status status;
  while (true) {
    auto more = (*reader)->Next(&pair);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    ASSERT_TRUE(*more) << "mismatch not detected";
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find(source + " has 2 lines"), std::string::npos) << status;
  EXPECT_NE(status.message().find(target + " has 5 lines"), std::string::npos) << status;
}

TEST(AlignedTextReaderTest, MissingFileNamesThePath) {
  auto reader = AlignedTextReader::Open(WriteTempFile("x.en", "a\n"), "/no/such/file.de");
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("/no/such/file.de"), std::string::npos);
}

TEST(AlignedTextReaderTest, ReadsMulti30kGzip) {
  auto reader = AlignedTextReader::Open(SharedDataPath("multi30k/val.en.gz"),
                                        SharedDataPath("multi30k/val.de.gz"));
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto pairs = ReadPairs(reader->get());
  EXPECT_EQ(pairs.size() + (*reader)->skips().total(), 1014u);
  EXPECT_GT(pairs.size(), 1000u);
  EXPECT_EQ(pairs[0].source.rfind("A group of men", 0), 0u) << pairs[0].source;
}

}  // namespace
}  // namespace tfm
