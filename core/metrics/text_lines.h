// Reads a plain or gzip-compressed UTF-8 text file as lines, the way
// sacreBLEU's command line does: lines end only at '\n' (a '\r' stays in the
// line), and a last line without '\n' still counts.
#ifndef TFM_CORE_METRICS_TEXT_LINES_H_
#define TFM_CORE_METRICS_TEXT_LINES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {

// The lines of `path` without their '\n'. A missing file is NotFound naming
// the path; bytes that are not UTF-8 are InvalidArgument naming path:line
// (sacreBLEU refuses such files too).
absl::StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path);

// The same lines without trailing whitespace (Python's str.rstrip()): what
// sacreBLEU's command line scores. tools/bleu and `evaluate` read
// hypotheses and references with it, so both accept and refuse the same
// files and give the same score.
absl::StatusOr<std::vector<std::string>> ReadStrippedTextLines(const std::string& path);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_TEXT_LINES_H_
