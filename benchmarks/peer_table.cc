#include "benchmarks/peer_table.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace tfm {
namespace bench {

absl::StatusOr<PeerReport> ParsePeerOutput(absl::string_view text) {
  PeerReport report;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("peer output line ", line_number, " (", why, "): ", line));
    };
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits(' ', 2), absl::SkipEmpty());
    if (fields[0] == "info") {
      if (fields.size() < 2) return bad("info without a key");
      report.info[std::string(fields[1])] = fields.size() > 2 ? std::string(fields[2]) : "";
    } else if (fields[0] == "result") {
      int index;
      double ms;
      if (fields.size() != 3 || !absl::SimpleAtoi(fields[1], &index) ||
          !absl::SimpleAtod(fields[2], &ms) || !(ms > 0)) {
        return bad("expected: result <index> <milliseconds > 0>");
      }
      if (!report.median_ms.emplace(index, ms).second) return bad("duplicate case");
    } else {
      return bad("unknown record");
    }
  }
  return report;
}

double GeomeanRatio(const std::vector<TableRow>& rows, absl::string_view op_prefix) {
  double log_sum = 0;
  int count = 0;
  for (const TableRow& row : rows) {
    if (!absl::StartsWith(row.op, op_prefix)) continue;
    log_sum += std::log(row.torch_ms / row.ours_ms);
    ++count;
  }
  return count == 0 ? 0.0 : std::exp(log_sum / count);
}

std::string FormatTable(const std::vector<TableRow>& rows) {
  size_t op_width = 2, shape_width = 5;
  for (const TableRow& row : rows) {
    op_width = std::max(op_width, row.op.size());
    shape_width = std::max(shape_width, row.shape.size());
  }
  const int ow = static_cast<int>(op_width), sw = static_cast<int>(shape_width);
  std::string table = absl::StrFormat("%-*s  %-*s  %10s  %10s  %10s\n", ow, "op", sw, "shape",
                                      "ours_ms", "torch_ms", "torch/ours");
  for (const TableRow& row : rows) {
    absl::StrAppendFormat(&table, "%-*s  %-*s  %10.3f  %10.3f  %10.2f\n", ow, row.op, sw,
                          row.shape, row.ours_ms, row.torch_ms, row.torch_ms / row.ours_ms);
  }
  if (GeomeanRatio(rows, "attention_fwdbwd") > 0) {
    absl::StrAppendFormat(&table, "geomean torch/ours (attention_fwdbwd): %.2f\n",
                          GeomeanRatio(rows, "attention_fwdbwd"));
  }
  absl::StrAppendFormat(&table, "geomean torch/ours: %.2f\n", GeomeanRatio(rows));
  return table;
}

}  // namespace bench
}  // namespace tfm
