#include "runtime/train/metrics_csv.h"

#include <cstdlib>
#include <string>

#include "core/data/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::remove(path.c_str());
  return path;
}

TrainingMetrics At(int64_t update) {
  TrainingMetrics m;
  m.update = update;
  m.epoch = 1;
  m.loss = 10.0 / update;
  m.nll = 9.0 / update;
  m.learning_rate = 6.98771234e-4;
  return m;
}

TEST(MetricsCsvTest, WritesHeaderAndRowsWithEmptyCellsForAbsentColumns) {
  const std::string path = TempPath("metrics.csv");
  MetricsCsvWriter csv = MetricsCsvWriter::Open(path, MetricColumns(), 0).value();
  ASSERT_TRUE(csv.Append(ToRow(At(100))).ok());
  ValidationMetrics valid;
  valid.update = 100;
  valid.loss = 3.5;
  valid.nll = 3.25;
  ASSERT_TRUE(csv.Append(ToRow(valid)).ok());

  const std::string text = ReadFileToString(path).value();
  EXPECT_THAT(text, testing::StartsWith("update,epoch,elapsed,loss,nll,ppl,lr,gnorm,src_tok_s,"
                                        "tgt_tok_s,valid_loss,valid_nll,valid_ppl\n"
                                        "100,1,0,0.1,0.09,"));
  EXPECT_THAT(text, HasSubstr(",0.000698771234,0,0,0,,,\n100,0,0,,,,,,,,3.5,3.25,25.79033992\n"));

  absl::StatusOr<MetricsTable> table = ReadMetricsCsv(path);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->rows.size(), 2);
  const int loss = table->ColumnIndex("loss");
  const int valid_loss = table->ColumnIndex("valid_loss");
  EXPECT_EQ(table->rows[0][loss], 0.1);
  EXPECT_FALSE(table->rows[0][valid_loss].has_value());
  EXPECT_EQ(table->rows[1][valid_loss], 3.5);
  EXPECT_FALSE(table->rows[1][loss].has_value());
  EXPECT_EQ(table->ColumnIndex("bleu"), -1);
}

TEST(MetricsCsvTest, ResumeDropsRowsAfterTheCheckpointAndAPartialLine) {
  const std::string path = TempPath("resume.csv");
  {
    MetricsCsvWriter csv = MetricsCsvWriter::Open(path, MetricColumns(), 0).value();
    for (int64_t update = 100; update <= 500; update += 100) {
      ASSERT_TRUE(csv.Append(ToRow(At(update))).ok());
    }
  }
  // The crash cut the last row short.
  ASSERT_TRUE(WriteFileAtomically(path, ReadFileToString(path).value() + "600,1,0,0.01").ok());
  {
    // Resuming from the checkpoint at update 300: 400 and 500 come again.
    MetricsCsvWriter csv = MetricsCsvWriter::Open(path, MetricColumns(), 300).value();
    ASSERT_TRUE(csv.Append(ToRow(At(400))).ok());
  }
  const MetricsTable table = ReadMetricsCsv(path).value();
  std::vector<double> updates;
  for (const auto& row : table.rows) updates.push_back(*row[0]);
  EXPECT_EQ(updates, (std::vector<double>{100, 200, 300, 400}));
}

// A file from before the validation score existed takes the new column
// (its rows get an empty cell there); a run without the score continues a
// file that has it.
TEST(MetricsCsvTest, ResumeKeepsTheLongerHeaderWhenOneIsAPrefixOfTheOther) {
  const std::string path = TempPath("added_column.csv");
  ASSERT_TRUE(WriteFileAtomically(path, "update,loss\n1,2\n2,3\n").ok());
  {
    MetricsCsvWriter csv = MetricsCsvWriter::Open(path, {"update", "loss", "valid_bleu"}, 1).value();
    ASSERT_TRUE(csv.Append({{"update", 2}, {"valid_bleu", 20}}).ok());
  }
  EXPECT_EQ(ReadFileToString(path).value(), "update,loss,valid_bleu\n1,2,\n2,,20\n");
  {
    MetricsCsvWriter csv = MetricsCsvWriter::Open(path, {"update", "loss"}, 2).value();
    ASSERT_TRUE(csv.Append({{"update", 3}, {"loss", 1}}).ok());
  }
  EXPECT_EQ(ReadFileToString(path).value(), "update,loss,valid_bleu\n1,2,\n2,,20\n3,1,\n");
  EXPECT_TRUE(ReadMetricsCsv(path).ok());
}

TEST(MetricsCsvTest, ResumeWithOtherColumnsIsRefused) {
  const std::string path = TempPath("columns.csv");
  ASSERT_TRUE(WriteFileAtomically(path, "update,loss\n1,2\n").ok());
  absl::Status status = MetricsCsvWriter::Open(path, MetricColumns(), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr(path));
  EXPECT_THAT(status.message(), HasSubstr("\"update,loss\""));
  EXPECT_EQ(ReadFileToString(path).value(), "update,loss\n1,2\n");  // Untouched.
}

TEST(MetricsCsvTest, UnknownColumnAndBadCellsAreErrors) {
  const std::string path = TempPath("bad.csv");
  MetricsCsvWriter csv = MetricsCsvWriter::Open(path, {"update", "loss"}, 0).value();
  EXPECT_THAT(csv.Append({{"update", 1}, {"bleu", 20}}).message(), HasSubstr("\"bleu\""));
  ASSERT_TRUE(WriteFileAtomically(path, "update,loss\n1,2\n2,x\n").ok());
  EXPECT_THAT(ReadMetricsCsv(path).status().message(), HasSubstr(path + ":3: \"x\""));
  ASSERT_TRUE(WriteFileAtomically(path, "update,loss\n1,2,3\n").ok());
  EXPECT_THAT(ReadMetricsCsv(path).status().message(), HasSubstr("3 cells"));
}

}  // namespace
}  // namespace tfm
