#include "core/data/skip_report.h"

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(SkipReportTest, CountsByReasonWithExamples) {
  SkipReport report;
  EXPECT_EQ(report.Summary(), "skipped 0 records");
  report.Skip("empty line", "a.txt:3");
  for (int i = 1; i <= 5; ++i) report.Skip("invalid utf-8", "b.txt:" + std::to_string(i));
  EXPECT_EQ(report.count("empty line"), 1);
  EXPECT_EQ(report.count("invalid utf-8"), 5);
  EXPECT_EQ(report.count("other"), 0);
  EXPECT_EQ(report.total(), 6);
  EXPECT_EQ(report.Summary(),
            "skipped 6 records: 1 empty line (a.txt:3), "
            "5 invalid utf-8 (b.txt:1, b.txt:2, b.txt:3, ...)");
}

TEST(SkipReportTest, MergeAddsCounts) {
  SkipReport a, b;
  a.Skip("too long", "x:1");
  b.Skip("too long", "y:2");
  b.Skip("empty line", "y:3");
  a.Merge(b);
  EXPECT_EQ(a.count("too long"), 2);
  EXPECT_EQ(a.total(), 3);
}

}  // namespace
}  // namespace tfm
