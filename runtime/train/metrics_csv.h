// Metrics as a CSV file, one row per report, that survives resuming: a
// resumed run continues the same file without repeating updates.
#ifndef TFM_RUNTIME_TRAIN_METRICS_CSV_H_
#define TFM_RUNTIME_TRAIN_METRICS_CSV_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/train/file_writers.h"
#include "runtime/train/training_metrics.h"

namespace tfm {

// A metrics CSV read back; an empty cell is an absent value (validation
// columns on training rows and the reverse).
struct MetricsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::optional<double>>> rows;

  // The column's position, or -1.
  int ColumnIndex(absl::string_view name) const;
};

// InvalidArgument naming the file and line for a malformed row.
absl::StatusOr<MetricsTable> ReadMetricsCsv(const std::string& path);

class MetricsCsvWriter {
 public:
  // Opens `path` to append rows of `columns`, whose first is "update". A
  // new file gets the header. An existing one (a resumed run) must have the
  // same header or one that is a prefix of it or that it is a prefix of:
  // the longer header is kept (older rows get empty cells in columns added
  // since). Its rows after `resume_update`, logged after the checkpoint the
  // run resumes from and about to be logged again, are dropped, as is a last
  // line cut short by a crash. That rewrite is atomic.
  static absl::StatusOr<MetricsCsvWriter> Open(const std::string& path,
                                               const std::vector<std::string>& columns,
                                               int64_t resume_update);
  // Appends one row with a single write (a crash loses at most a partial
  // last line, which the next Open drops); columns absent from `row` stay
  // empty. InvalidArgument for a name that is not a column.
  absl::Status Append(const MetricRow& row);

 private:
  MetricsCsvWriter(AppendOnlyFile file, std::vector<std::string> columns)
      : file_(std::move(file)), columns_(std::move(columns)) {}

  AppendOnlyFile file_;
  std::vector<std::string> columns_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_METRICS_CSV_H_
