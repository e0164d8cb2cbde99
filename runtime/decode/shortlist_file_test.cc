#include "runtime/decode/shortlist_file.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "core/data/file_io.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

std::string TempPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

ShortlistTable SmallTable() {
  ShortlistTable table;
  table.vocabulary_size = 12;
  table.vocabulary_checksum = 0x0123456789abcdefull;
  table.frequent = {4, 6, 5};
  table.best.assign(12, {});
  table.best[7] = {9, 10, 4};
  table.best[11] = {8};
  table.comments = {"learned from 3 pairs"};
  return table;
}

TEST(ShortlistFileTest, WhatIsWrittenReadsBackAndLoadsCut) {
  const std::string path = TempPath("round_trip.shortlist");
  const ShortlistTable table = SmallTable();
  ASSERT_TRUE(WriteShortlistFile(path, table).ok());
  absl::StatusOr<ShortlistTable> read = ReadShortlistFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->vocabulary_size, 12);
  EXPECT_EQ(read->vocabulary_checksum, table.vocabulary_checksum);
  EXPECT_EQ(read->frequent, table.frequent);
  EXPECT_EQ(read->best, table.best);

  absl::StatusOr<VocabularyShortlist> loaded =
      LoadShortlist(path, 12, table.vocabulary_checksum, /*frequent_count=*/1, /*best_count=*/2);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->Candidates({7}, {3}), (std::vector<int32_t>{3, 4, 9, 10}));
}

TEST(ShortlistFileTest, AnotherVocabularyIsRefused) {
  const std::string path = TempPath("other_vocabulary.shortlist");
  ASSERT_TRUE(WriteShortlistFile(path, SmallTable()).ok());
  absl::StatusOr<VocabularyShortlist> other_size = LoadShortlist(path, 13, 0x0123456789abcdefull, 5, 5);
  ASSERT_FALSE(other_size.ok());
  EXPECT_NE(other_size.status().message().find(path), std::string::npos);
  EXPECT_NE(other_size.status().message().find("the model's has 13"), std::string::npos)
      << other_size.status();
  EXPECT_FALSE(LoadShortlist(path, 12, 0x0123456789abcdeeull, 5, 5).ok());
}

// Each bad file: the error names the file and line and says what is wrong.
TEST(ShortlistFileTest, BadFilesNameTheLine) {
  const std::string header = "tfm-shortlist 1\nvocabulary_size 12\nvocabulary_checksum ff\n";
  struct Case {
    std::string text;
    std::string expected;  // In the message.
  };
  const std::vector<Case> cases = {
      {"hello\n", ":1: not a shortlist file"},
      {header + "frequent 1 2\nsource 3 4 12\n", ":5: '12' is not a token id"},
      {header + "frequent 1 x\n", ":4: 'x' is not a token id"},
      {header + "frequent 1\nsource 3 4\n\nsource 3 5\n", ":7: a second line for source 3"},
      {header + "frequent 1\nfrequent 2\n", ":5: a second 'frequent' line"},
      {header + "frequent 1\ntargets 3\n", ":5: unknown record 'targets'"},
      {"tfm-shortlist 1\nfrequent 1\n", ":2: 'frequent' before the vocabulary_size line"},
      {header, "no frequent line (a truncated file?)"},
      {header + "frequent 1\nsource 3 4", "the last line has no newline"},
      {"", "empty"},
      // Format 2 ends with an end line: without it the file was cut short,
      // even at a line boundary; nothing may follow it.
      {"tfm-shortlist 2\nvocabulary_size 12\nvocabulary_checksum ff\nfrequent 1\nsource 3 4\n",
       ": no 'end' line after its 5 lines: the file is cut short"},
      {"tfm-shortlist 2\nvocabulary_size 12\nvocabulary_checksum ff\nfrequent 1\nend\nsource 3 4\n",
       ":6: 'source' after the 'end' line"},
      {"tfm-shortlist 3\n", ":1: not a shortlist file of format 1 or 2"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = TempPath("bad_" + std::to_string(i) + ".shortlist");
    ASSERT_TRUE(WriteFileAtomically(path, cases[i].text).ok());
    absl::StatusOr<ShortlistTable> read = ReadShortlistFile(path);
    ASSERT_FALSE(read.ok()) << "case " << i;
    EXPECT_NE(read.status().message().find(path), std::string::npos) << read.status();
    EXPECT_NE(read.status().message().find(cases[i].expected), std::string::npos)
        << "case " << i << ": " << read.status();
  }
  EXPECT_FALSE(ReadShortlistFile(TempPath("missing.shortlist")).ok());
}

// What the command writes ends with the end line; cutting any whole lines
// off it is refused. A format-1 file (no end line) still reads.
TEST(ShortlistFileTest, AFileCutAtALineBoundaryIsRefused) {
  const std::string path = TempPath("cut.shortlist");
  ASSERT_TRUE(WriteShortlistFile(path, SmallTable()).ok());
  const std::string whole = ReadFileToString(path).value();
  ASSERT_EQ(whole.substr(whole.size() - 4), "end\n");
  const std::string cut = whole.substr(0, whole.rfind('\n', whole.size() - 5) + 1);
  ASSERT_TRUE(WriteFileAtomically(path, cut).ok());
  EXPECT_NE(ReadShortlistFile(path).status().message().find("cut short"), std::string::npos)
      << ReadShortlistFile(path).status();
  std::string version_1 = cut;
  version_1.replace(0, std::string("tfm-shortlist 2").size(), "tfm-shortlist 1");
  ASSERT_TRUE(WriteFileAtomically(path, version_1).ok());
  EXPECT_TRUE(ReadShortlistFile(path).ok()) << ReadShortlistFile(path).status();
}

}  // namespace
}  // namespace tfm
