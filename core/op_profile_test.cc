#include "core/op_profile.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

int CountOccurrences(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
    ++count;
  }
  return count;
}

TEST(OpProfileTest, OnlyOutermostCallsCountAndRowsSortByTotal) {
  SetOpProfiling(true);
  ResetOpProfile();
  {
    const ScopedOpTimer outer("outer_op");
    const ScopedOpTimer nested("nested_op");  // Inside outer_op: not counted.
  }
  RecordOpTime("big_op", 2.0);
  RecordOpTime("big_op", 1.0);
  RecordOpTime("small_op", 0.5);
  const std::string report = OpProfileReport(/*wall_seconds=*/4.0);
  EXPECT_EQ(CountOccurrences(report, "nested_op"), 0) << report;
  EXPECT_EQ(CountOccurrences(report, "outer_op"), 1) << report;
  // big_op: 2 calls, 3000 ms, listed before small_op.
  EXPECT_TRUE(absl::StrContains(report, "big_op")) << report;
  EXPECT_LT(report.find("big_op"), report.find("small_op")) << report;
  EXPECT_TRUE(absl::StrContains(report, "3000.00")) << report;
  EXPECT_TRUE(absl::StrContains(report, "1500.0000")) << report;  // big_op's ms per call.
  EXPECT_TRUE(absl::StrContains(report, "ops' share of 4000.00 ms wall time: 87.")) << report;
  EXPECT_EQ(OpProfileCalls("big_op"), 2);
  EXPECT_EQ(OpProfileCalls("outer_op"), 1);
  EXPECT_EQ(OpProfileCalls("nested_op"), 0);
  ResetOpProfile();
  EXPECT_EQ(CountOccurrences(OpProfileReport(), "big_op"), 0);
}

TEST(OpProfileTest, DisabledRecordsNothingThroughTheTimer) {
  SetOpProfiling(false);
  ResetOpProfile();
  { const ScopedOpTimer timer("quiet_op"); }
  EXPECT_EQ(CountOccurrences(OpProfileReport(), "quiet_op"), 0);
}

TEST(OpProfileTest, WaitingForTheDeviceIsItsOwnSwitchAndImpliesProfiling) {
  SetOpProfiling(false);
  EXPECT_FALSE(OpProfilingSynchronizes());
  SetOpProfilingSynchronizes(true);
  EXPECT_TRUE(OpProfilingEnabled());
  EXPECT_TRUE(OpProfilingSynchronizes());
  SetOpProfiling(true);  // Already on: keeps the wait.
  EXPECT_TRUE(OpProfilingSynchronizes());
  SetOpProfiling(false);  // Warm-up steps outside the table: no wait then...
  EXPECT_FALSE(OpProfilingSynchronizes());
  SetOpProfiling(true);  // ...and the wait again after.
  EXPECT_TRUE(OpProfilingSynchronizes());
  SetOpProfilingSynchronizes(false);  // Profiling stays on, without the wait.
  EXPECT_TRUE(OpProfilingEnabled());
  EXPECT_FALSE(OpProfilingSynchronizes());
  SetOpProfiling(false);
  EXPECT_FALSE(OpProfilingEnabled());
}

TEST(OpProfileTest, RowsByShapeKeepTheWaitAndNameTheRow) {
  SetOpProfiling(false);
  SetOpProfilingSynchronizes(false);
  EXPECT_FALSE(OpProfilingByShape());
  SetOpProfilingByShape(true);
  EXPECT_TRUE(OpProfilingEnabled());
  EXPECT_TRUE(OpProfilingSynchronizes());
  EXPECT_TRUE(OpProfilingByShape());
  SetOpProfiling(false);
  EXPECT_FALSE(OpProfilingByShape());
  SetOpProfiling(true);  // Back on: still by shape.
  EXPECT_TRUE(OpProfilingByShape());
  ResetOpProfile();
  {
    ScopedOpTimer timer("linear");
    ASSERT_TRUE(timer.timing());
    timer.set_row("linear bf16 8x4 2x4");
  }
  { const ScopedOpTimer timer("linear"); }  // No row set: the op's name.
  { const ScopedOpTimer timer("linear_backward"); }  // Another op sharing the prefix.
  const std::string report = OpProfileReport();
  EXPECT_EQ(CountOccurrences(report, "linear bf16 8x4 2x4 "), 1) << report;
  EXPECT_EQ(CountOccurrences(report, "linear "), 2) << report;
  // Both of linear's rows, not linear_backward's.
  EXPECT_EQ(OpProfileCalls("linear"), 2) << report;
  EXPECT_EQ(OpProfileCalls("linear_backward"), 1) << report;
  EXPECT_EQ(OpProfileCalls("line"), 0) << report;
  SetOpProfilingByShape(false);  // Profiling and the wait stay on.
  EXPECT_FALSE(OpProfilingByShape());
  EXPECT_TRUE(OpProfilingSynchronizes());
  SetOpProfilingSynchronizes(false);
  SetOpProfiling(false);
  ResetOpProfile();
}

}  // namespace
}  // namespace tfm
