#include "runtime/train/progress_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tfm {
namespace {

constexpr int kBarWidth = 30;
constexpr double kRedrawSeconds = 0.1;
// Carriage return, then erase to the end of the line (ANSI "EL").
constexpr char kEraseLine[] = "\r\033[K";

}  // namespace

ProgressReporter::ProgressReporter(std::ostream* out, bool terminal, int64_t total_updates,
                                   int64_t log_every)
    : out_(out),
      terminal_(terminal),
      total_updates_(total_updates),
      log_every_(std::max<int64_t>(1, log_every)) {
  last_.loss = std::numeric_limits<double>::quiet_NaN();  // No figures yet.
}

ProgressReporter ProgressReporter::ForStderr(int64_t total_updates, int64_t log_every) {
  return ProgressReporter(&std::cerr, isatty(STDERR_FILENO) == 1, total_updates, log_every);
}

std::string ProgressReporter::Bar(const TrainingMetrics& metrics) const {
  std::string bar;
  if (total_updates_ > 0) {
    const double fraction =
        std::clamp(static_cast<double>(metrics.update) / total_updates_, 0.0, 1.0);
    const int filled = static_cast<int>(fraction * kBarWidth);
    std::string cells(kBarWidth, ' ');
    std::fill(cells.begin(), cells.begin() + filled, '=');
    if (filled < kBarWidth) cells[filled] = '>';
    absl::StrAppendFormat(&bar, "[%s] %5.1f%% %d/%d", cells, 100 * fraction, metrics.update,
                          total_updates_);
  } else {
    absl::StrAppend(&bar, "update ", metrics.update);
  }
  if (!std::isnan(metrics.loss)) absl::StrAppendFormat(&bar, " | loss %.4g", metrics.loss);
  const int64_t done = metrics.update - first_update_;
  const double spent = metrics.elapsed_seconds - first_elapsed_;
  if (total_updates_ > 0 && done > 0 && spent > 0) {
    const double remaining = (total_updates_ - metrics.update) * spent / done;
    absl::StrAppend(&bar, " | eta ", FormatDuration(remaining));
  }
  return bar;
}

void ProgressReporter::ClearBar() {
  if (bar_shown_) *out_ << kEraseLine;
  bar_shown_ = false;
}

void ProgressReporter::DrawBar() {
  *out_ << kEraseLine << Bar(last_) << std::flush;
  bar_shown_ = true;
  bar_drawn_at_ = last_.elapsed_seconds;
}

bool ProgressReporter::BarDue(bool log_line) const {
  return terminal_ && (log_line || bar_drawn_at_ < 0 ||
                       last_.elapsed_seconds - bar_drawn_at_ >= kRedrawSeconds);
}

void ProgressReporter::Start(int64_t update, double elapsed_seconds) {
  if (started_) return;
  started_ = true;
  first_update_ = update;
  first_elapsed_ = elapsed_seconds;
}

void ProgressReporter::Advance(int64_t update, double elapsed_seconds) {
  Start(update, elapsed_seconds);
  last_.update = update;
  last_.elapsed_seconds = elapsed_seconds;
  if (BarDue(/*log_line=*/false)) {
    DrawBar();
    out_->flush();
  }
}

void ProgressReporter::Update(const TrainingMetrics& metrics) {
  Start(metrics.update, metrics.elapsed_seconds);
  last_ = metrics;
  const bool log_now = metrics.update % log_every_ == 0;
  if (log_now) {
    ClearBar();
    *out_ << FormatLogLine(metrics, total_updates_) << "\n";
  }
  if (BarDue(log_now)) DrawBar();
  out_->flush();
}

void ProgressReporter::Message(absl::string_view line) {
  const bool redraw = bar_shown_;
  ClearBar();
  *out_ << line << "\n";
  if (redraw) DrawBar();
  out_->flush();
}

void ProgressReporter::Finish() {
  if (bar_shown_) {
    DrawBar();
    *out_ << "\n";
    bar_shown_ = false;
  }
  out_->flush();
}

}  // namespace tfm
