#include "benchmarks/peer_table.h"

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace bench {
namespace {

TEST(ParsePeerOutputTest, ReadsInfoAndResults) {
  absl::StatusOr<PeerReport> report = ParsePeerOutput(
      "info torch_version 2.15.0+cpu\n"
      "info blas_info mkl\n\n"
      "result 0 1.5\n"
      "result 3 0.25\n");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->info["torch_version"], "2.15.0+cpu");
  EXPECT_EQ(report->info["blas_info"], "mkl");
  EXPECT_THAT(report->median_ms,
              ::testing::ElementsAre(::testing::Pair(0, 1.5), ::testing::Pair(3, 0.25)));
}

TEST(ParsePeerOutputTest, RejectsWhatItDoesNotKnow) {
  EXPECT_FALSE(ParsePeerOutput("Traceback (most recent call last):\n").ok());
  EXPECT_FALSE(ParsePeerOutput("result 1 fast\n").ok());
  EXPECT_FALSE(ParsePeerOutput("result 1 0\n").ok());
  EXPECT_FALSE(ParsePeerOutput("result 1 2.0\nresult 1 3.0\n").ok());
}

TEST(FormatTableTest, EndsWithTheGeomean) {
  const std::vector<TableRow> rows = {
      {"linear_fwd", "4096x512 -> 2048", 2.0, 4.0},              // 2
      {"attention_fwdbwd", "n=256 (16x8x256x64)", 10.0, 80.0},  // 8
  };
  EXPECT_DOUBLE_EQ(GeomeanRatio(rows), 4.0);
  EXPECT_DOUBLE_EQ(GeomeanRatio(rows, "attention_fwdbwd"), 8.0);
  const std::string table = FormatTable(rows);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex("op +shape +ours_ms +torch_ms +torch/ours"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(
                            "linear_fwd +4096x512 -> 2048 +2\\.000 +4\\.000 +2\\.00"));
  EXPECT_EQ(lines[3], "geomean torch/ours (attention_fwdbwd): 8.00");
  EXPECT_EQ(lines[4], "geomean torch/ours: 4.00");
}

}  // namespace
}  // namespace bench
}  // namespace tfm
