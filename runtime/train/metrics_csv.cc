#include "runtime/train/metrics_csv.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/check.h"
#include "core/data/file_io.h"
#include "core/status_macros.h"
#include "runtime/train/file_writers.h"

namespace tfm {
namespace {

// Complete lines only: text after the last newline is a write cut short.
std::vector<absl::string_view> CompleteLines(absl::string_view text) {
  const size_t end = text.rfind('\n');
  if (end == absl::string_view::npos) return {};
  return absl::StrSplit(text.substr(0, end), '\n');
}

absl::StatusOr<std::vector<std::optional<double>>> ParseRow(absl::string_view line, size_t columns,
                                                            const std::string& where) {
  std::vector<absl::string_view> cells = absl::StrSplit(line, ',');
  if (cells.size() != columns) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", cells.size(), " cells, the header has ", columns));
  }
  std::vector<std::optional<double>> row;
  for (absl::string_view cell : cells) {
    double value = 0;
    if (cell.empty()) {
      row.push_back(std::nullopt);
    } else if (absl::SimpleAtod(cell, &value)) {
      row.push_back(value);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(where, ": \"", cell, "\" is not a number"));
    }
  }
  if (!row[0].has_value()) return absl::InvalidArgumentError(absl::StrCat(where, ": no update"));
  return row;
}

// True when `prefix` is the start of `columns`.
bool IsPrefix(const std::vector<std::string>& prefix, const std::vector<std::string>& columns) {
  return prefix.size() <= columns.size() &&
         std::equal(prefix.begin(), prefix.end(), columns.begin());
}

}  // namespace

int MetricsTable::ColumnIndex(absl::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == name) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<MetricsTable> ReadMetricsCsv(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  const std::vector<absl::string_view> lines = CompleteLines(text);
  if (lines.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no header line"));
  MetricsTable table;
  table.columns = absl::StrSplit(lines[0], ',');
  for (size_t i = 1; i < lines.size(); ++i) {
    TFM_ASSIGN_OR_RETURN(auto row,
                         ParseRow(lines[i], table.columns.size(), absl::StrCat(path, ":", i + 1)));
    table.rows.push_back(std::move(row));
  }
  return table;
}

absl::StatusOr<MetricsCsvWriter> MetricsCsvWriter::Open(const std::string& path,
                                                        const std::vector<std::string>& columns,
                                                        int64_t resume_update) {
  TFM_CHECK(!columns.empty() && columns[0] == "update", "the first CSV column is the update");
  std::vector<std::string> file_columns = columns;
  std::vector<absl::string_view> kept_rows;
  absl::StatusOr<std::string> existing = ReadFileToString(path);
  if (existing.ok()) {
    const std::vector<absl::string_view> lines = CompleteLines(*existing);
    if (!lines.empty()) {
      const std::vector<std::string> old_columns = absl::StrSplit(lines[0], ',');
      // Columns are only ever added at the end (a validation score): the
      // longer header is kept, so a run resuming a file from before a
      // column existed, or one without that column, continues it.
      if (!IsPrefix(old_columns, columns) && !IsPrefix(columns, old_columns)) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, " has the columns \"", lines[0], "\", this run writes \"",
            absl::StrJoin(columns, ","), "\"; move the old file away to start a new one"));
      }
      if (old_columns.size() > columns.size()) file_columns = old_columns;
      for (size_t i = 1; i < lines.size(); ++i) {
        TFM_ASSIGN_OR_RETURN(
            auto row, ParseRow(lines[i], old_columns.size(), absl::StrCat(path, ":", i + 1)));
        if (*row[0] <= resume_update) kept_rows.push_back(lines[i]);
      }
    }
  } else if (!absl::IsNotFound(existing.status())) {
    return existing.status();
  }
  std::string kept = absl::StrCat(absl::StrJoin(file_columns, ","), "\n");
  for (absl::string_view row : kept_rows) {
    // Rows from before columns were added get empty cells in them.
    const size_t cells = 1 + std::count(row.begin(), row.end(), ',');
    absl::StrAppend(&kept, row, std::string(file_columns.size() - cells, ','), "\n");
  }
  TFM_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(path));
  TFM_RETURN_IF_ERROR(file.Append(kept));
  TFM_RETURN_IF_ERROR(file.Commit());
  TFM_ASSIGN_OR_RETURN(AppendOnlyFile appender, AppendOnlyFile::Open(path));
  return MetricsCsvWriter(std::move(appender), std::move(file_columns));
}

absl::Status MetricsCsvWriter::Append(const MetricRow& row) {
  std::vector<std::string> cells(columns_.size());
  for (const auto& [name, value] : row) {
    const auto it = std::find(columns_.begin(), columns_.end(), name);
    if (it == columns_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          file_.path(), ": \"", name, "\" is not a column (", absl::StrJoin(columns_, ","), ")"));
    }
    // Ten significant digits keep learning rates like 6.98771e-4 and
    // counts up to 10^10 exact enough to plot and compare.
    cells[it - columns_.begin()] = absl::StrFormat("%.10g", value);
  }
  return file_.Append(absl::StrCat(absl::StrJoin(cells, ","), "\n"));
}

}  // namespace tfm
