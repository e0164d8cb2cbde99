#include <zlib.h>

#include <cstdlib>
#include <string>

#include "core/data/line_reader.h"
#include "core/data/sentence_checks.h"
#include "core/data/utf8.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

TEST(Utf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("Gr\xC3\xBC\xC3\x9F" "e \xE2\x82\xAC \xF0\x9F\x98\x80"));  // Grüße € 😀
}

TEST(Utf8Test, RejectsMalformedText) {
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // Truncated.
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // Overlong '/'.
  EXPECT_FALSE(IsValidUtf8("\xE0\x80\xAF"));      // Overlong, three bytes.
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // Surrogate U+D800.
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // Above U+10FFFF.
  EXPECT_FALSE(IsValidUtf8("\xFF"));
  EXPECT_FALSE(IsValidUtf8("ok \x80 stray continuation"));
}

TEST(SentenceChecksTest, ReasonsInOrder) {
  EXPECT_EQ(SentenceRejection("fine", false), nullptr);
  EXPECT_STREQ(SentenceRejection("  \t", false), kSkipEmpty);
  EXPECT_STREQ(SentenceRejection("\xFF", false), kSkipInvalidUtf8);
  EXPECT_STREQ(SentenceRejection(absl::string_view("a\0b", 3), false), kSkipNulByte);
  EXPECT_STREQ(SentenceRejection("cut", true), kSkipTooLong);
  EXPECT_STREQ(PairRejection("ok", false, "", false), kSkipEmpty);
  EXPECT_EQ(PairRejection("ok", false, "ok", false), nullptr);
}

std::string WriteGzip(const std::string& name, const std::string& contents) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  gzFile file = gzopen(path.c_str(), "wb");
  gzwrite(file, contents.data(), contents.size());
  gzclose(file);
  return path;
}

std::vector<std::string> ReadAll(const std::string& path, int64_t max_bytes,
                                 std::vector<bool>* too_long = nullptr) {
  auto reader = LineReader::Open(path, max_bytes);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> lines;
  std::string line;
  bool long_line;
  while (true) {
    auto more = (*reader)->Next(&line, &long_line);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    lines.push_back(line);
    if (too_long) too_long->push_back(long_line);
  }
  return lines;
}

TEST(LineReaderTest, PlainAndGzipGiveTheSameLines) {
  const std::string text = "one\r\ntwo\n\nfour without newline";
  const std::vector<std::string> expected = {"one", "two", "", "four without newline"};
  EXPECT_EQ(ReadAll(WriteTempFile("plain.txt", text), 100), expected);
  EXPECT_EQ(ReadAll(WriteGzip("lines.gz", text), 100), expected);
}

TEST(LineReaderTest, NulBytesDoNotMergeLines) {
  const std::string text = std::string("a\0b\nc\n", 6);
  const auto lines = ReadAll(WriteTempFile("nul.txt", text), 100);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::string("a\0b", 3));
  EXPECT_EQ(lines[1], "c");
}

TEST(LineReaderTest, OverLongLinesAreCutAndFlagged) {
  const std::string text = std::string(200000, 'x') + "\nshort\n";
  std::vector<bool> too_long;
  const auto lines = ReadAll(WriteTempFile("long.txt", text), 10, &too_long);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], std::string(10, 'x'));
  EXPECT_EQ(too_long, (std::vector<bool>{true, false}));
  EXPECT_EQ(lines[1], "short");
}

TEST(LineReaderTest, MissingFileNamesThePath) {
  auto reader = LineReader::Open("/nonexistent/dir/corpus.en", 100);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(reader.status().message().find("/nonexistent/dir/corpus.en"), std::string::npos);
}

TEST(LineReaderTest, TruncatedGzipIsAnErrorNotACrash) {
  std::string gz;
  {
    const std::string path = WriteGzip("full.gz", std::string(100000, 'y') + "\n");
    FILE* f = std::fopen(path.c_str(), "rb");
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) gz.append(buffer, n);
    std::fclose(f);
  }
  auto reader = LineReader::Open(WriteTempFile("cut.gz", gz.substr(0, gz.size() / 2)), 1 << 20);
  ASSERT_TRUE(reader.ok());
  std::string line;
  bool too_long;
  absl::StatusOr<bool> more;
  do {
    more = (*reader)->Next(&line, &too_long);
  } while (more.ok() && *more);
  EXPECT_FALSE(more.ok());
  EXPECT_NE(more.status().message().find("cut.gz"), std::string::npos) << more.status();
}

TEST(LineReaderTest, ReadsMulti30k) {
  EXPECT_EQ(ReadAll(SharedDataPath("multi30k/train.de.gz"), 4096).size(), 29000u);
}

}  // namespace
}  // namespace tfm
