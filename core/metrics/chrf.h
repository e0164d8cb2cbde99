// Corpus chrF exactly as sacreBLEU 2.4.3 computes it with its defaults:
// character n-grams up to 6 over text with whitespace removed, no word
// n-grams, beta 2, mixed case, and sacreBLEU's effective-order averaging
// (not epsilon smoothing). With several references, each segment uses the
// reference that gives it the best chrF.
#ifndef TFM_CORE_METRICS_CHRF_H_
#define TFM_CORE_METRICS_CHRF_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {

inline constexpr int kChrfCharOrder = 6;
inline constexpr int kChrfBeta = 2;

struct ChrfScore {
  double score = 0;  // 0..100.

  // sacreBLEU's text line: "chrF2 = 56.78".
  std::string Format() const;
};

// Same shapes as CorpusBleu: `references[k][i]` is segment i of set k.
absl::StatusOr<ChrfScore> CorpusChrf(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references);

// "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.3".
std::string ChrfSignature(int num_refs);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_CHRF_H_
