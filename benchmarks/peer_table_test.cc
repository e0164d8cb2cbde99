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

TableRow Row(std::string op, RowGroup group, Bound bound, std::vector<double> ours,
             std::vector<double> torch, double peak = -1) {
  TableRow row;
  row.op = std::move(op);
  row.shape = "s";
  row.group = group;
  row.bound = bound;
  row.ours.ms = std::move(ours);
  row.torch.ms = std::move(torch);
  row.peak_fraction = peak;
  return row;
}

TEST(PassTimesTest, MedianAndSpread) {
  const PassTimes t{{3.0, 1.0, 2.0}};
  EXPECT_DOUBLE_EQ(t.Median(), 2.0);
  EXPECT_DOUBLE_EQ(t.Spread(), 1.0);  // (3 - 1) / 2.
  EXPECT_DOUBLE_EQ(PassTimes{{4.0}}.Spread(), 0.0);
}

TEST(PassTimesTest, KeepsTheFastestWhenAsked) {
  PassTimes t{{3.0, 1.0, 2.0}};
  t.keep_fastest = true;
  EXPECT_DOUBLE_EQ(t.Kept(), 1.0);
  EXPECT_DOUBLE_EQ(t.Spread(), 2.0);  // (3 - 1) / 1.
  TableRow row = Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {2.0, 1.0}, {4.0, 3.0});
  row.ours.keep_fastest = row.torch.keep_fastest = true;
  EXPECT_DOUBLE_EQ(row.Ratio(), 3.0);
}

TEST(TableRowTest, ComparesWithTheFasterTorchAllocator) {
  TableRow row = Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {8.0});
  EXPECT_DOUBLE_EQ(row.Ratio(), 8.0);
  row.torch_cached.ms = {2.0};
  EXPECT_DOUBLE_EQ(row.Ratio(), 2.0);
}

TEST(HeadlineTest, TimeWeightedAndGeomeanSkipMismatchesAndOtherGroups) {
  std::vector<TableRow> rows = {
      Row("linear_fwd", RowGroup::kTraining, Bound::kGemm, {10.0}, {20.0}),    // 2
      Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {8.0}),      // 8
      Row("linear_fwd", RowGroup::kDecode, Bound::kMemory, {1.0}, {0.5}),      // 0.5
      Row("add_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {100.0}),     // mismatch
  };
  rows[3].outputs_match = false;
  EXPECT_DOUBLE_EQ(TimeWeightedRatio(rows, RowGroup::kTraining), 28.0 / 11.0);
  EXPECT_DOUBLE_EQ(GeomeanRatio(rows, RowGroup::kTraining), 4.0);
  EXPECT_DOUBLE_EQ(TimeWeightedRatio(rows, RowGroup::kDecode), 0.5);
}

TEST(GoalVerdictTest, AppliesTheIssuesGoals) {
  EXPECT_THAT(GoalVerdict(Row("linear_fwd", RowGroup::kTraining, Bound::kGemm, {1}, {1.1}, 0.85)),
              ::testing::EndsWith("PASS"));
  EXPECT_THAT(GoalVerdict(Row("linear_fwd", RowGroup::kTraining, Bound::kGemm, {1}, {1.1}, 0.7)),
              ::testing::EndsWith("FAIL"));
  // Memory-bound: either 1.3x or 80% of the bandwidth.
  EXPECT_THAT(GoalVerdict(Row("add_fwd", RowGroup::kTraining, Bound::kMemory, {1}, {0.9}, 0.85)),
              ::testing::EndsWith("PASS"));
  EXPECT_THAT(GoalVerdict(Row("add_fwd", RowGroup::kTraining, Bound::kMemory, {1}, {1.2}, 0.5)),
              ::testing::EndsWith("FAIL"));
  EXPECT_THAT(GoalVerdict(Row("attention_fwdbwd", RowGroup::kTraining, Bound::kOther, {1}, {1.2})),
              ::testing::EndsWith("FAIL"));
  EXPECT_EQ(GoalVerdict(Row("attention_fwd", RowGroup::kTraining, Bound::kOther, {1}, {1.2})), "-");
  EXPECT_THAT(GoalVerdict(Row("attention_fwd", RowGroup::kDecode, Bound::kMemory, {1}, {1.0})),
              ::testing::EndsWith("PASS"));
  TableRow differs = Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {1}, {9});
  differs.outputs_match = false;
  EXPECT_EQ(GoalVerdict(differs), "FAIL: outputs differ");
}

TEST(FormatTableTest, RowsThenHeadlines) {
  std::vector<TableRow> rows = {
      Row("linear_fwd", RowGroup::kTraining, Bound::kGemm, {2.0, 2.2, 1.8}, {4.0, 4.0, 4.0}, 0.5),
      Row("attention_fwdbwd", RowGroup::kTraining, Bound::kOther, {10.0}, {80.0}),
      Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {3.0}),
  };
  rows[2].outputs_match = false;
  const std::string table = FormatTable(rows);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex(
                            "op +shape +ours_ms +\\+- +torch_ms +\\+- +torch_je +\\+- "
                            "+torch/ours +peak +goal"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(
                            "linear_fwd +s +2\\.000 +20% +4\\.000 +0% +- +2\\.00 +50% +"
                            ">=1\\.0x & >=80% FMA: FAIL"));
  EXPECT_THAT(lines[3], ::testing::HasSubstr("mismatch"));
  EXPECT_EQ(lines[4],
            "time-weighted torch/ours (training rows): 7.00 (goal >=1.15: PASS); geomean 4.00");
  EXPECT_EQ(lines[5], "geomean torch/ours (attention_fwdbwd): 8.00");
}

TEST(FormatDeviceTableTest, RatesRatiosAndHeadlinesPerDtype) {
  std::vector<TableRow> rows = {
      Row("linear_fwd", RowGroup::kTraining, Bound::kGemm, {2.0}, {4.0}, 0.5),
      Row("relu_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {1.0}, 0.9),
      Row("add_fwd", RowGroup::kTraining, Bound::kMemory, {1.0}, {5.0}),
  };
  rows[0].dtype = "bf16";
  rows[0].flops = 4e12;  // 2 ms: 2000 TF/s ours, 1000 torch.
  rows[1].dtype = rows[2].dtype = "f32";
  rows[1].bytes = 3e9;  // 1 ms: 3000 GB/s.
  rows[2].outputs_match = false;
  const std::vector<std::string> lines =
      absl::StrSplit(FormatDeviceTable(rows), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 7);
  EXPECT_THAT(lines[0], ::testing::MatchesRegex("op +dtype +shape +ours_ms +\\+- +torch_ms +\\+- "
                                                "+ours +torch +torch/ours +peak"));
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(
                            "linear_fwd +bf16 +s +2\\.000 +0% +4\\.000 +0% +2000\\.0 TF/s "
                            "+1000\\.0 TF/s +2\\.00 +50%"));
  EXPECT_THAT(lines[2], ::testing::HasSubstr("3000 GB/s     3000 GB/s"));
  EXPECT_THAT(lines[3], ::testing::HasSubstr("mismatch"));
  EXPECT_EQ(lines[4], "time-weighted torch/ours (training rows): 1.67; geomean 1.41");
  EXPECT_EQ(lines[5], "time-weighted torch/ours (training rows, f32): 1.00; geomean 1.00");
  EXPECT_EQ(lines[6], "time-weighted torch/ours (training rows, bf16): 2.00; geomean 2.00");
}

}  // namespace
}  // namespace bench
}  // namespace tfm
