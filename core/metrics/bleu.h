// Corpus BLEU exactly as sacreBLEU 2.4.3 computes it with its defaults:
// 13a tokenization, mixed case, n-grams up to 4, 'exp' smoothing, and the
// reference length closest to each hypothesis (the shorter one on ties).
#ifndef TFM_CORE_METRICS_BLEU_H_
#define TFM_CORE_METRICS_BLEU_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {

inline constexpr int kBleuMaxOrder = 4;

// The version whose numbers and signature these reproduce.
inline constexpr char kSacreBleuVersion[] = "2.4.3";

struct BleuScore {
  double score = 0;  // 0..100.
  std::array<int64_t, kBleuMaxOrder> correct{};
  std::array<int64_t, kBleuMaxOrder> total{};
  std::array<double, kBleuMaxOrder> precisions{};  // Percentages.
  double brevity_penalty = 0;
  int64_t hyp_len = 0;
  int64_t ref_len = 0;

  // sacreBLEU's text line: "BLEU = 34.12 65.2/40.1/27.3/19.0 (BP = 1.000
  // ratio = 1.012 hyp_len = 12345 ref_len = 12200)".
  std::string Format() const;
};

// `references[k][i]` is segment i of reference set k; every set has as many
// segments as `hypotheses`. Segments are raw (untokenized) text.
absl::StatusOr<BleuScore> CorpusBleu(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references);

// "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3".
std::string BleuSignature(int num_refs);

// Checks the shapes shared by BLEU and chrF: at least one segment and one
// reference set, and equal segment counts.
absl::Status CheckCorpusShape(const std::vector<std::string>& hypotheses,
                              const std::vector<std::vector<std::string>>& references);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_BLEU_H_
