#include "benchmarks/peer_table.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace tfm {
namespace bench {
namespace {

// The goals.
constexpr double kGemmRatioGoal = 1.0, kGemmPeakGoal = 0.8;
constexpr double kMemoryRatioGoal = 1.3, kMemoryPeakGoal = 0.8;
constexpr double kAttentionRatioGoal = 1.3;
constexpr double kDecodeRatioGoal = 1.0;
constexpr double kTimeWeightedGoal = 1.15;

const char* PassFail(bool met) { return met ? "PASS" : "FAIL"; }

std::string Percent(double fraction) {
  return fraction < 0 ? "-" : absl::StrFormat("%.0f%%", 100 * fraction);
}

// "     1.234    5%": the kept time and the spread over the passes.
std::string Times(const PassTimes& t) {
  return t.ms.empty() ? absl::StrFormat("%10s %6s", "-", "")
                      : absl::StrFormat("%10.3f %5.0f%%", t.Kept(), 100 * t.Spread());
}

// "812.3 TF/s" for GEMM rows, "2841 GB/s" for memory-bound ones.
std::string Rate(const TableRow& row, double ms) {
  if (!(ms > 0)) return "-";
  if (row.bound == Bound::kGemm && row.flops > 0) {
    return absl::StrFormat("%.1f TF/s", row.flops / ms / 1e9);
  }
  if (row.bound == Bound::kMemory && row.bytes > 0) {
    return absl::StrFormat("%.0f GB/s", row.bytes / ms / 1e6);
  }
  return "-";
}

// Rows of one dtype ("" for all).
std::vector<TableRow> OfDtype(const std::vector<TableRow>& rows, const std::string& dtype) {
  std::vector<TableRow> kept;
  for (const TableRow& row : rows) {
    if (dtype.empty() || row.dtype == dtype) kept.push_back(row);
  }
  return kept;
}

// Rows above 100% of a limit, said rather than hidden (see FormatTable).
std::string OverPeakNotes(const std::vector<TableRow>& rows, absl::string_view gemm_warning,
                          absl::string_view memory_note) {
  int gemm_over = 0, memory_over = 0;
  for (const TableRow& row : rows) {
    if (row.peak_fraction <= 1.05) continue;
    if (row.bound == Bound::kGemm) ++gemm_over;
    if (row.bound == Bound::kMemory) ++memory_over;
  }
  std::string notes;
  if (gemm_over > 0) {
    absl::StrAppendFormat(&notes, "WARNING: %d GEMM rows %s\n", gemm_over, gemm_warning);
  }
  if (memory_over > 0) {
    absl::StrAppendFormat(&notes, "note: %d memory-bound rows %s\n", memory_over, memory_note);
  }
  return notes;
}

}  // namespace

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

double PassTimes::Median() const {
  if (ms.empty()) return 0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t half = sorted.size() / 2;
  return sorted.size() % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
}

double PassTimes::Fastest() const {
  return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end());
}

double PassTimes::Spread() const {
  if (ms.size() < 2) return 0;
  const auto [low, high] = std::minmax_element(ms.begin(), ms.end());
  return (*high - *low) / Kept();
}

double TableRow::TorchMs() const {
  return torch_cached.ms.empty() ? torch.Kept() : std::min(torch.Kept(), torch_cached.Kept());
}

double GeomeanRatio(const std::vector<TableRow>& rows, RowGroup group) {
  double log_sum = 0;
  int count = 0;
  for (const TableRow& row : rows) {
    if (row.group != group || !row.outputs_match) continue;
    log_sum += std::log(row.Ratio());
    ++count;
  }
  return count == 0 ? 0.0 : std::exp(log_sum / count);
}

double TimeWeightedRatio(const std::vector<TableRow>& rows, RowGroup group) {
  double torch = 0, ours = 0;
  for (const TableRow& row : rows) {
    if (row.group != group || !row.outputs_match) continue;
    torch += row.TorchMs();
    ours += row.ours.Kept();
  }
  return ours == 0 ? 0.0 : torch / ours;
}

std::string GoalVerdict(const TableRow& row) {
  if (!row.outputs_match) return "FAIL: outputs differ";
  const double ratio = row.Ratio();
  if (row.group == RowGroup::kDecode) {
    return absl::StrFormat(">=%.1fx: %s", kDecodeRatioGoal, PassFail(ratio >= kDecodeRatioGoal));
  }
  switch (row.bound) {
    case Bound::kGemm:
      return absl::StrFormat(">=%.1fx & >=%.0f%% FMA: %s", kGemmRatioGoal, 100 * kGemmPeakGoal,
                             PassFail(ratio >= kGemmRatioGoal &&
                                      row.peak_fraction >= kGemmPeakGoal));
    case Bound::kMemory:
      return absl::StrFormat(">=%.1fx | >=%.0f%% BW: %s", kMemoryRatioGoal,
                             100 * kMemoryPeakGoal,
                             PassFail(ratio >= kMemoryRatioGoal ||
                                      row.peak_fraction >= kMemoryPeakGoal));
    case Bound::kOther:
      break;
  }
  if (absl::StartsWith(row.op, "attention_fwdbwd")) {
    return absl::StrFormat(">=%.1fx: %s", kAttentionRatioGoal,
                           PassFail(ratio >= kAttentionRatioGoal));
  }
  return "-";
}

std::string FormatTable(const std::vector<TableRow>& rows) {
  size_t op_width = 2, shape_width = 5;
  for (const TableRow& row : rows) {
    op_width = std::max(op_width, row.op.size());
    shape_width = std::max(shape_width, row.shape.size());
  }
  const int ow = static_cast<int>(op_width), sw = static_cast<int>(shape_width);
  std::string table =
      absl::StrFormat("%-*s  %-*s  %10s %6s  %10s %6s  %10s %6s  %10s  %5s  %s\n", ow, "op", sw,
                      "shape", "ours_ms", "+-", "torch_ms", "+-", "torch_je", "+-", "torch/ours",
                      "peak", "goal");
  for (const TableRow& row : rows) {
    const std::string ratio =
        row.outputs_match ? absl::StrFormat("%.2f", row.Ratio()) : std::string("mismatch");
    absl::StrAppendFormat(&table, "%-*s  %-*s  %s  %s  %s  %10s  %5s  %s\n", ow, row.op, sw,
                          row.shape, Times(row.ours), Times(row.torch), Times(row.torch_cached),
                          ratio, Percent(row.peak_fraction), GoalVerdict(row));
  }
  // Above 100% of a measured limit, either the limit or the row's count of
  // work is wrong (GEMM), or the operands stay in the last-level cache
  // between calls (memory rows: the copy measures DRAM): said, not hidden.
  table += OverPeakNotes(rows,
                         "above the measured FMA peak: the peak measurement is wrong on this "
                         "machine; do not trust the peak column",
                         "above the DRAM copy bandwidth: their operands stay in the last-level "
                         "cache between calls");
  const double weighted = TimeWeightedRatio(rows, RowGroup::kTraining);
  absl::StrAppendFormat(&table,
                        "time-weighted torch/ours (training rows): %.2f (goal >=%.2f: %s); "
                        "geomean %.2f\n",
                        weighted, kTimeWeightedGoal, PassFail(weighted >= kTimeWeightedGoal),
                        GeomeanRatio(rows, RowGroup::kTraining));
  std::vector<TableRow> attention;
  for (const TableRow& row : rows) {
    if (absl::StartsWith(row.op, "attention_fwdbwd") && row.group == RowGroup::kTraining) {
      attention.push_back(row);
    }
  }
  if (!attention.empty()) {
    absl::StrAppendFormat(&table, "geomean torch/ours (attention_fwdbwd): %.2f\n",
                          GeomeanRatio(attention, RowGroup::kTraining));
  }
  if (GeomeanRatio(rows, RowGroup::kDecode) > 0) {
    absl::StrAppendFormat(&table, "decode rows (batch 1): time-weighted %.2f, geomean %.2f\n",
                          TimeWeightedRatio(rows, RowGroup::kDecode),
                          GeomeanRatio(rows, RowGroup::kDecode));
  }
  return table;
}

std::string FormatDeviceTable(const std::vector<TableRow>& rows) {
  size_t op_width = 2, shape_width = 5;
  for (const TableRow& row : rows) {
    op_width = std::max(op_width, row.op.size());
    shape_width = std::max(shape_width, row.shape.size());
  }
  const int ow = static_cast<int>(op_width), sw = static_cast<int>(shape_width);
  std::string table = absl::StrFormat(
      "%-*s  %-5s  %-*s  %10s %6s  %10s %6s  %12s  %12s  %10s  %5s\n", ow, "op", "dtype", sw,
      "shape", "ours_ms", "+-", "torch_ms", "+-", "ours", "torch", "torch/ours", "peak");
  for (const TableRow& row : rows) {
    const std::string ratio =
        row.outputs_match ? absl::StrFormat("%.2f", row.Ratio()) : std::string("mismatch");
    absl::StrAppendFormat(&table, "%-*s  %-5s  %-*s  %s  %s  %12s  %12s  %10s  %5s\n", ow, row.op,
                          row.dtype, sw, row.shape, Times(row.ours), Times(row.torch),
                          Rate(row, row.ours.Kept()), Rate(row, row.TorchMs()), ratio,
                          Percent(row.peak_fraction));
  }
  table += OverPeakNotes(rows,
                         "above the stated compute peak: the peak or the row's FLOP count is "
                         "wrong; do not trust the peak column",
                         "above the measured HBM copy bandwidth: their operands stay in the L2 "
                         "cache between calls");
  for (const std::string dtype : {"", "f32", "bf16"}) {
    const std::vector<TableRow> of_dtype = OfDtype(rows, dtype);
    if (of_dtype.empty() || GeomeanRatio(of_dtype, RowGroup::kTraining) == 0) continue;
    absl::StrAppendFormat(&table,
                          "time-weighted torch/ours (training rows%s): %.2f; geomean %.2f\n",
                          dtype.empty() ? "" : absl::StrCat(", ", dtype),
                          TimeWeightedRatio(of_dtype, RowGroup::kTraining),
                          GeomeanRatio(of_dtype, RowGroup::kTraining));
  }
  if (GeomeanRatio(rows, RowGroup::kDecode) > 0) {
    absl::StrAppendFormat(&table, "decode rows (batch 1): time-weighted %.2f, geomean %.2f\n",
                          TimeWeightedRatio(rows, RowGroup::kDecode),
                          GeomeanRatio(rows, RowGroup::kDecode));
  }
  return table;
}

}  // namespace bench
}  // namespace tfm
