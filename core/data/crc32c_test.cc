#include "core/data/crc32c.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

// Check values from RFC 3720 (iSCSI), appendix B.4.
TEST(Crc32cTest, MatchesRfc3720Vectors) {
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8a9136aau);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62a8ab43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(Crc32c(ascending), 0x46dd794eu);
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
}

TEST(Crc32cTest, ExtendingPiecewiseEqualsWhole) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>(i * 7 + 3));
  for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
    const uint32_t first = Crc32c(absl::string_view(text).substr(0, cut));
    EXPECT_EQ(ExtendCrc32c(first, absl::string_view(text).substr(cut)), Crc32c(text)) << cut;
  }
}

TEST(Crc32cTest, MaskIsTensorFlowsRotation) {
  // masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8, as in TensorFlow's crc32c.h.
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0xa282ead9u);
  EXPECT_NE(MaskCrc32c(Crc32c("abc")), Crc32c("abc"));
}

TEST(Crc32cTest, FileChecksumEqualsInMemoryChecksum) {
  std::string contents;
  for (int i = 0; i < (3 << 20) + 5; ++i) contents.push_back(static_cast<char>(i * 31));
  const std::string path = testing::WriteTempFile("crc.bin", contents);
  absl::StatusOr<uint32_t> crc = FileCrc32c(path);
  ASSERT_TRUE(crc.ok()) << crc.status();
  EXPECT_EQ(*crc, Crc32c(contents));
  EXPECT_EQ(FileCrc32c(path + ".missing").status().code(), absl::StatusCode::kNotFound);
  // A range across the 1 MiB reads, and one past the end.
  const uint64_t offset = 64, length = (2 << 20) + 3;
  absl::StatusOr<uint32_t> range = FileRangeCrc32c(path, offset, length);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(*range, Crc32c(absl::string_view(contents).substr(offset, length)));
  const absl::Status past = FileRangeCrc32c(path, offset, contents.size()).status();
  EXPECT_EQ(past.code(), absl::StatusCode::kDataLoss) << past;
}

}  // namespace
}  // namespace tfm
