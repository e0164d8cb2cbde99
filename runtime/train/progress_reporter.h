// Console output of training: one log line every N updates, and, when the
// stream is a terminal, a live progress bar redrawn in place beneath them.
// Piped or redirected output (nohup, CI logs) gets the plain lines only,
// without carriage returns or escape codes to clutter the file.
#ifndef TFM_RUNTIME_TRAIN_PROGRESS_REPORTER_H_
#define TFM_RUNTIME_TRAIN_PROGRESS_REPORTER_H_

#include <cstdint>
#include <ostream>

#include "absl/strings/string_view.h"
#include "runtime/train/training_metrics.h"

namespace tfm {

class ProgressReporter {
 public:
  // `terminal`: draw the live bar (whether `out` is a terminal is the
  // caller's to say, so tests can pass either). `total_updates` 0 means
  // unknown (no percentage or ETA).
  ProgressReporter(std::ostream* out, bool terminal, int64_t total_updates, int64_t log_every);
  // On std::cerr, with the bar when standard error is a terminal.
  static ProgressReporter ForStderr(int64_t total_updates, int64_t log_every);

  // After every update: a log line when metrics.update is a multiple of
  // log_every; on a terminal, the bar at most every 0.1 s of
  // metrics.elapsed_seconds, so fast steps do not flood the terminal.
  void Update(const TrainingMetrics& metrics);
  // After an update whose figures are not yet read (the trainer reads them
  // every log_every updates): the bar moves to `update`, with the figures
  // of the last Update.
  void Advance(int64_t update, double elapsed_seconds);
  // A line of another kind (validation, checkpoint saved), kept above the bar.
  void Message(absl::string_view line);
  // Leaves the bar's last state on its own line.
  void Finish();

  // "[=========>          ] 45.0% 4500/10000 | loss 4.213 | eta 0:12:00"
  // (no loss before the first figures: a NaN).
  std::string Bar(const TrainingMetrics& metrics) const;

 private:
  void ClearBar();
  void DrawBar();
  // The first report fixes where the ETA's rate is measured from.
  void Start(int64_t update, double elapsed_seconds);
  // Whether to redraw the bar for last_: on a terminal, after a log line
  // (which erased it), the first time, or 0.1 s after the last drawing.
  bool BarDue(bool log_line) const;

  std::ostream* out_;
  bool terminal_;
  int64_t total_updates_;
  int64_t log_every_;
  // The first report seen, for the rate behind the ETA (a resumed run's
  // rate starts at its own first update).
  bool started_ = false;
  int64_t first_update_ = 0;
  double first_elapsed_ = 0;
  TrainingMetrics last_;
  bool bar_shown_ = false;
  double bar_drawn_at_ = -1;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_PROGRESS_REPORTER_H_
