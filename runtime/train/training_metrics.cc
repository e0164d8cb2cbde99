#include "runtime/train/training_metrics.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tfm {

double TrainingMetrics::perplexity() const { return std::exp(nll); }
double ValidationMetrics::perplexity() const { return std::exp(nll); }

std::vector<std::string> MetricColumns(const std::string& score_name) {
  std::vector<std::string> columns = {
      "update", "epoch",     "elapsed",   "loss",       "nll",       "ppl",      "lr",
      "gnorm",  "src_tok_s", "tgt_tok_s", "valid_loss", "valid_nll", "valid_ppl"};
  if (!score_name.empty()) columns.push_back(absl::StrCat("valid_", score_name));
  return columns;
}

MetricRow ToRow(const TrainingMetrics& m) {
  return {{"update", m.update},
          {"epoch", m.epoch},
          {"elapsed", m.elapsed_seconds},
          {"loss", m.loss},
          {"nll", m.nll},
          {"ppl", m.perplexity()},
          {"lr", m.learning_rate},
          {"gnorm", m.gradient_norm},
          {"src_tok_s", m.source_tokens_per_second},
          {"tgt_tok_s", m.target_tokens_per_second}};
}

MetricRow ToRow(const ValidationMetrics& m) {
  MetricRow row = {{"update", m.update},   {"epoch", m.epoch},   {"elapsed", m.elapsed_seconds},
                   {"valid_loss", m.loss}, {"valid_nll", m.nll}, {"valid_ppl", m.perplexity()}};
  if (m.score.has_value()) row.emplace_back(absl::StrCat("valid_", m.score_name), *m.score);
  return row;
}

std::string FormatDuration(double seconds) {
  const int64_t total = static_cast<int64_t>(std::max(0.0, seconds));
  return absl::StrFormat("%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60);
}

std::string FormatLogLine(const TrainingMetrics& m, int64_t total_updates) {
  const std::string update =
      total_updates > 0 ? absl::StrCat(m.update, "/", total_updates) : absl::StrCat(m.update);
  const std::string loss_scale =
      m.loss_scale > 0 ? absl::StrFormat(" | loss_scale %g", m.loss_scale) : "";
  return absl::StrFormat(
      "epoch %d | update %s | loss %.4g | nll %.4g | ppl %.4g | lr %.4g | gnorm %.4g%s | "
      "src tok/s %.0f | tgt tok/s %.0f | elapsed %s",
      m.epoch, update, m.loss, m.nll, m.perplexity(), m.learning_rate, m.gradient_norm, loss_scale,
      m.source_tokens_per_second, m.target_tokens_per_second, FormatDuration(m.elapsed_seconds));
}

std::string FormatValidationLine(const ValidationMetrics& m) {
  std::string line =
      absl::StrFormat("valid | epoch %d | update %d | loss %.4g | nll %.4g | ppl %.4g", m.epoch,
                      m.update, m.loss, m.nll, m.perplexity());
  if (m.score.has_value()) absl::StrAppendFormat(&line, " | %s %.2f", m.score_name, *m.score);
  absl::StrAppend(&line, " | elapsed ", FormatDuration(m.elapsed_seconds));
  return line;
}

}  // namespace tfm
