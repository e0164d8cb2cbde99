#include "runtime/train/progress_reporter.h"

#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

TrainingMetrics At(int64_t update, double elapsed_seconds) {
  TrainingMetrics m;
  m.epoch = 1;
  m.update = update;
  m.loss = 5.0;
  m.nll = 4.5;
  m.elapsed_seconds = elapsed_seconds;
  return m;
}

TEST(ProgressReporterTest, PlainOutputHasOnlyLogLines) {
  std::ostringstream out;
  ProgressReporter reporter(&out, /*terminal=*/false, /*total_updates=*/10, /*log_every=*/4);
  for (int update = 1; update <= 10; ++update) reporter.Update(At(update, update));
  reporter.Message("valid | epoch 1 | update 10 | loss 4");
  reporter.Finish();
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3);
  EXPECT_TRUE(absl::StartsWith(lines[0], "epoch 1 | update 4/10 | loss 5 |")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], "epoch 1 | update 8/10 |")) << lines[1];
  EXPECT_EQ(lines[2], "valid | epoch 1 | update 10 | loss 4");
  EXPECT_FALSE(absl::StrContains(out.str(), "\r"));
  EXPECT_FALSE(absl::StrContains(out.str(), "\033"));
}

TEST(ProgressReporterTest, TerminalKeepsLogLinesAboveALiveBar) {
  std::ostringstream out;
  ProgressReporter reporter(&out, /*terminal=*/true, /*total_updates=*/100, /*log_every=*/50);
  reporter.Update(At(1, 0.0));
  EXPECT_EQ(out.str(), "\r\033[K[>                             ]   1.0% 1/100 | loss 5");
  out.str("");
  reporter.Update(At(2, 0.05));  // Within 0.1 s of the last drawing: no redraw.
  EXPECT_EQ(out.str(), "");
  reporter.Update(At(3, 0.2));
  EXPECT_THAT(out.str(), HasSubstr("3/100"));
  out.str("");
  reporter.Update(At(50, 0.49));  // A log line: erase the bar, print, redraw.
  EXPECT_THAT(out.str(), testing::StartsWith("\r\033[Kepoch 1 | update 50/100 |"));
  EXPECT_THAT(out.str(), HasSubstr("\n\r\033[K[===============>"));
  out.str("");
  reporter.Message("checkpoint saved");
  EXPECT_THAT(out.str(), testing::StartsWith("\r\033[Kcheckpoint saved\n\r\033[K["));
  out.str("");
  reporter.Finish();
  EXPECT_THAT(out.str(), testing::EndsWith("\n"));
}

TEST(ProgressReporterTest, AdvanceMovesTheBarWithTheLastFigures) {
  std::ostringstream out;
  ProgressReporter reporter(&out, /*terminal=*/true, /*total_updates=*/100, /*log_every=*/10);
  reporter.Advance(1, 0.0);  // No figures read yet: no loss.
  EXPECT_EQ(out.str(), "\r\033[K[>                             ]   1.0% 1/100");
  out.str("");
  reporter.Advance(2, 0.05);  // Within 0.1 s of the last drawing: no redraw.
  EXPECT_EQ(out.str(), "");
  reporter.Update(At(10, 0.3));  // The first log line: its figures.
  out.str("");
  reporter.Advance(13, 0.5);  // 12 updates in 0.5 s: 87 more take 3.6 s.
  EXPECT_EQ(out.str(), "\r\033[K[===>                          ]  13.0% 13/100 | loss 5 | eta 0:00:03");
  ProgressReporter plain(&out, /*terminal=*/false, 100, 10);
  out.str("");
  plain.Advance(3, 1.0);  // Piped: only log lines, no bar.
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressReporterTest, BarShowsPercentageAndEtaFromTheObservedRate) {
  std::ostringstream out;
  ProgressReporter reporter(&out, true, /*total_updates=*/101, /*log_every=*/1000);
  reporter.Update(At(1, 10.0));
  // 50 updates in 100 s since the first report: 50 more take 100 s.
  EXPECT_EQ(reporter.Bar(At(51, 110.0)),
            "[===============>              ]  50.5% 51/101 | loss 5 | eta 0:01:40");
  ProgressReporter open_ended(&out, true, /*total_updates=*/0, 1000);
  EXPECT_EQ(open_ended.Bar(At(7, 1.0)), "update 7 | loss 5");
}

}  // namespace
}  // namespace tfm
