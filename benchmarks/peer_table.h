// The protocol between ops_vs_torch and its PyTorch peer (torch_ops.py), and
// the comparison table with its goals, kept apart from the binary so a fast
// test can check them without PyTorch.
//
// The peer prints one line per fact on standard output:
//   info <key> <value, the rest of the line>
//   result <request index> <median milliseconds>
#ifndef TFM_BENCHMARKS_PEER_TABLE_H_
#define TFM_BENCHMARKS_PEER_TABLE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {
namespace bench {

struct PeerReport {
  std::map<std::string, std::string> info;  // torch_version, blas_info, threads, ...
  std::map<int, double> median_ms;          // By request index.
};

absl::StatusOr<PeerReport> ParsePeerOutput(absl::string_view text);

// What limits a row, and so which machine figure its time is held against.
enum class Bound {
  kGemm,    // Matrix products: a fraction of the FMA peak.
  kMemory,  // Streaming ops: a fraction of the measured copy bandwidth.
  kOther,   // Fused attention: neither alone.
};

// Which headline a row counts in.
enum class RowGroup { kTraining, kDecode };

// Milliseconds of each pass over all cases (3 by default): the CPU keeps
// their median, the GPU (quiet, no neighbours) the fastest.
struct PassTimes {
  std::vector<double> ms;
  bool keep_fastest = false;
  double Median() const;
  double Fastest() const;
  double Kept() const { return keep_fastest ? Fastest() : Median(); }
  // (max - min) / Kept() over the passes, 0 for one pass.
  double Spread() const;
};

struct TableRow {
  std::string op;
  std::string shape;
  RowGroup group = RowGroup::kTraining;
  Bound bound = Bound::kOther;
  PassTimes ours;
  PassTimes torch;         // glibc malloc.
  PassTimes torch_cached;  // A caching malloc (jemalloc); empty if not run.
  // False when the outputs disagreed beyond the unit tests' tolerances:
  // the row then shows no ratio and counts in no headline.
  bool outputs_match = true;
  // Of the FMA peak (kGemm) or of the copy bandwidth (kMemory); < 0: none.
  double peak_fraction = -1;
  // For the GPU table: the dtype and the work of one call, for its rates.
  std::string dtype;
  double flops = 0;
  double bytes = 0;

  // The faster of the two PyTorch allocators: we compare with its best.
  double TorchMs() const;
  double Ratio() const { return TorchMs() / ours.Kept(); }
};

// Geometric mean of torch/ours over the matching rows of `group`; 0 if none.
double GeomeanRatio(const std::vector<TableRow>& rows, RowGroup group);
// Sum of torch times over sum of ours, matching rows of `group`; 0 if none.
double TimeWeightedRatio(const std::vector<TableRow>& rows, RowGroup group);

// The row's goal (from the issue) and whether it is met, e.g.
// ">=1.0x & >=80% FMA: FAIL"; "-" for rows without one.
std::string GoalVerdict(const TableRow& row);

// The table (one line per row: times, spreads, ratio, peak, goal), then the
// headlines: time-weighted and geomean for training rows, the attention
// forward+backward geomean, and the decode rows' time-weighted ratio.
std::string FormatTable(const std::vector<TableRow>& rows);

// The GPU table: per row the dtype, times with spreads, our rate and
// PyTorch's (TFLOP/s for GEMM rows, GB/s of minimal traffic for memory-bound
// ones), the ratio and our fraction of the device's peak; then the
// time-weighted and geomean ratios of the training rows, in all and per
// dtype, and the decode rows'. No goals: the issue sets none per GPU op.
std::string FormatDeviceTable(const std::vector<TableRow>& rows);

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_PEER_TABLE_H_
