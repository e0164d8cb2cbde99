// The protocol between ops_vs_torch and its PyTorch peer (torch_ops.py), and
// the comparison table, kept apart from the binary so a fast test can check
// them without PyTorch.
//
// The peer prints one line per fact on standard output:
//   info <key> <value, the rest of the line>
//   result <case index> <median milliseconds>
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
  std::map<int, double> median_ms;          // By case index.
};

absl::StatusOr<PeerReport> ParsePeerOutput(absl::string_view text);

struct TableRow {
  std::string op;
  std::string shape;
  double ours_ms = 0;
  double torch_ms = 0;
};

// Geometric mean of torch_ms / ours_ms over the rows whose op starts with
// `op_prefix` (all rows for ""); 0 when none match.
double GeomeanRatio(const std::vector<TableRow>& rows, absl::string_view op_prefix = "");

// The table: a header `op shape ours_ms torch_ms torch/ours`, one line per
// row, the attention forward+backward geomean, and last
// `geomean torch/ours: X`.
std::string FormatTable(const std::vector<TableRow>& rows);

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_PEER_TABLE_H_
