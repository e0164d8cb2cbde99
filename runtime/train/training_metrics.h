// The numbers the trainer reports, and their names as CSV columns and
// TensorBoard tags, defined once so the log line, the CSV, TensorBoard and
// the plot agree.
#ifndef TFM_RUNTIME_TRAIN_TRAINING_METRICS_H_
#define TFM_RUNTIME_TRAIN_TRAINING_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tfm {

// Named values of one step, in column order.
using MetricRow = std::vector<std::pair<std::string, double>>;

// Averages over the updates since the last report. Losses are in nats per
// target token; `loss` includes label smoothing, `nll` does not, so
// perplexity is exp(nll).
struct TrainingMetrics {
  int64_t epoch = 0;
  int64_t update = 0;
  double loss = 0;
  double nll = 0;
  double learning_rate = 0;
  double gradient_norm = 0;
  double source_tokens_per_second = 0;
  double target_tokens_per_second = 0;
  double elapsed_seconds = 0;  // Since training began, across resumes.
  // Dynamic loss scaling's scale (f16 training); 0 when off, and then not
  // printed.
  double loss_scale = 0;

  double perplexity() const;
};

struct ValidationMetrics {
  int64_t epoch = 0;
  int64_t update = 0;
  double loss = 0;
  double nll = 0;
  double elapsed_seconds = 0;
  // The task's validation score (runtime/train/trainer.h ValidationScorer),
  // e.g. "bleu"; no name, no score.
  std::string score_name;
  std::optional<double> score;

  double perplexity() const;
};

// The CSV columns, in order: update, epoch, elapsed, loss, nll, ppl, lr,
// gnorm, src_tok_s, tgt_tok_s, valid_loss, valid_nll, valid_ppl, and
// valid_<score_name> when the run has a validation score.
std::vector<std::string> MetricColumns(const std::string& score_name = "");

// The columns a training or validation report fills (others stay empty).
MetricRow ToRow(const TrainingMetrics& metrics);
MetricRow ToRow(const ValidationMetrics& metrics);

// "epoch 3 | update 1200/100000 | loss 4.213 | nll 3.872 | ppl 48.04 |
// lr 0.000698 | gnorm 1.024 | src tok/s 24512 | tgt tok/s 26010 |
// elapsed 1:02:03" (the total is left out when 0).
std::string FormatLogLine(const TrainingMetrics& metrics, int64_t total_updates = 0);
// "valid | epoch 3 | update 1200 | loss 4.1 | nll 3.7 | ppl 40.45 | bleu 23.41"
// (the score only when there is one).
std::string FormatValidationLine(const ValidationMetrics& metrics);

// "h:mm:ss".
std::string FormatDuration(double seconds);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TRAINING_METRICS_H_
