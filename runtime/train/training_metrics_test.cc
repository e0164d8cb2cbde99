#include "runtime/train/training_metrics.h"

#include <cmath>

#include "gtest/gtest.h"

namespace tfm {
namespace {

TrainingMetrics Sample() {
  TrainingMetrics m;
  m.epoch = 3;
  m.update = 1200;
  m.loss = 4.21337;
  m.nll = 3.87211;
  m.learning_rate = 6.9877e-4;
  m.gradient_norm = 1.02391;
  m.source_tokens_per_second = 24511.6;
  m.target_tokens_per_second = 26010.2;
  m.elapsed_seconds = 3723.9;
  return m;
}

TEST(TrainingMetricsTest, PerplexityIsExpOfNll) {
  EXPECT_DOUBLE_EQ(Sample().perplexity(), std::exp(3.87211));
}

TEST(TrainingMetricsTest, LogLineHasEveryFieldInOrder) {
  EXPECT_EQ(FormatLogLine(Sample(), 100000),
            "epoch 3 | update 1200/100000 | loss 4.213 | nll 3.872 | ppl 48.04 | lr 0.0006988 | "
            "gnorm 1.024 | src tok/s 24512 | tgt tok/s 26010 | elapsed 1:02:03");
  EXPECT_EQ(FormatLogLine(Sample()).substr(0, 24), "epoch 3 | update 1200 | ");
  // Dynamic loss scaling (f16) adds its scale after the norm.
  TrainingMetrics scaled = Sample();
  scaled.loss_scale = 32768;
  EXPECT_EQ(FormatLogLine(scaled, 100000),
            "epoch 3 | update 1200/100000 | loss 4.213 | nll 3.872 | ppl 48.04 | lr 0.0006988 | "
            "gnorm 1.024 | loss_scale 32768 | src tok/s 24512 | tgt tok/s 26010 | elapsed 1:02:03");
}

TEST(TrainingMetricsTest, ValidationLine) {
  ValidationMetrics v;
  v.epoch = 2;
  v.update = 1000;
  v.loss = 4.1;
  v.nll = std::log(40.0);
  v.elapsed_seconds = 480.4;
  EXPECT_EQ(FormatValidationLine(v),
            "valid | epoch 2 | update 1000 | loss 4.1 | nll 3.689 | ppl 40 | elapsed 0:08:00");
  v.score_name = "bleu";
  v.score = 23.4149;
  EXPECT_EQ(FormatValidationLine(v),
            "valid | epoch 2 | update 1000 | loss 4.1 | nll 3.689 | ppl 40 | bleu 23.41 | "
            "elapsed 0:08:00");
}

TEST(TrainingMetricsTest, RowsUseOnlyKnownColumns) {
  ValidationMetrics v;
  v.nll = 1;
  EXPECT_DOUBLE_EQ(ToRow(v).back().second, std::exp(1.0));  // valid_ppl
  ValidationMetrics scored = v;
  scored.score_name = "bleu";
  scored.score = 12.5;
  EXPECT_EQ(ToRow(scored).back(), (std::pair<std::string, double>("valid_bleu", 12.5)));
  const std::vector<std::string> columns = MetricColumns("bleu");
  EXPECT_EQ(columns.back(), "valid_bleu");
  EXPECT_EQ(MetricColumns().size() + 1, columns.size());
  for (const MetricRow& row : {ToRow(Sample()), ToRow(v), ToRow(scored)}) {
    EXPECT_EQ(row[0].first, "update");
    for (const auto& [name, value] : row) {
      EXPECT_NE(std::find(columns.begin(), columns.end(), name), columns.end()) << name;
    }
  }
}

TEST(TrainingMetricsTest, DurationIsHoursMinutesSeconds) {
  EXPECT_EQ(FormatDuration(0), "0:00:00");
  EXPECT_EQ(FormatDuration(59.9), "0:00:59");
  EXPECT_EQ(FormatDuration(36 * 3600 + 61), "36:01:01");
}

}  // namespace
}  // namespace tfm
