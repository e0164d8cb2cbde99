// Scores a hypothesis file against reference files the way the sacreBLEU
// command line reads them (lines stripped of trailing whitespace), and
// formats the result for tools/bleu.
#ifndef TFM_CORE_METRICS_TEXT_REPORT_H_
#define TFM_CORE_METRICS_TEXT_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/metrics/bleu.h"
#include "core/metrics/chrf.h"

namespace tfm {

struct FileScores {
  BleuScore bleu;
  ChrfScore chrf;
  int num_refs = 0;
  bool has_chrf = false;

  // Lines:
  //   BLEU = 34.12 65.2/40.1/27.3/19.0 (BP = ... ref_len = 12200)
  //   BLEU details: correct 1/2/3/4 total 5/6/7/8
  //   BLEU signature: nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3
  // and, with chrF, "chrF2 = 56.78" and "chrF signature: ...".
  std::string Format() const;
};

// Fails naming the file for a missing or unreadable file, and naming the
// files and their line counts when they differ.
absl::StatusOr<FileScores> ScoreFiles(const std::string& hypothesis_path,
                                      const std::vector<std::string>& reference_paths,
                                      bool with_chrf);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_TEXT_REPORT_H_
