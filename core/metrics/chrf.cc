#include "core/metrics/chrf.h"

#include <array>
#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/metrics/bleu.h"
#include "core/metrics/python_text.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Character n-grams keyed by their UTF-8 bytes (one code point n-gram is one
// byte substring), per order.
using CharNgrams = std::array<absl::flat_hash_map<std::string, int64_t>, kChrfCharOrder>;

// Per order: hypothesis n-grams, reference n-grams, matches.
struct OrderStats {
  int64_t hyp = 0;
  int64_t ref = 0;
  int64_t match = 0;
};
using ChrfStats = std::array<OrderStats, kChrfCharOrder>;

CharNgrams ExtractNgrams(const std::string& segment) {
  const std::string text = RemovePythonSpaces(segment);
  const std::vector<size_t> offsets = CodePointOffsets(text);
  const int length = static_cast<int>(offsets.size()) - 1;
  CharNgrams ngrams;
  for (int n = 1; n <= kChrfCharOrder; ++n) {
    for (int i = 0; i + n <= length; ++i) {
      ++ngrams[n - 1][text.substr(offsets[i], offsets[i + n] - offsets[i])];
    }
  }
  return ngrams;
}

ChrfStats MatchStats(const CharNgrams& hyp, const CharNgrams& ref) {
  ChrfStats stats;
  for (int n = 0; n < kChrfCharOrder; ++n) {
    int64_t hyp_count = 0;
    for (const auto& [ngram, count] : hyp[n]) {
      hyp_count += count;
      auto it = ref[n].find(ngram);
      if (it != ref[n].end()) stats[n].match += std::min(count, it->second);
    }
    // sacreBLEU counts no hypothesis n-grams where the reference has none.
    stats[n].hyp = ref[n].empty() ? 0 : hyp_count;
    for (const auto& [ngram, count] : ref[n]) stats[n].ref += count;
  }
  return stats;
}

// sacreBLEU's _compute_f_score() without epsilon smoothing: precision and
// recall are averaged over the orders where both sides have n-grams, then
// combined. The operation order matches it for identical doubles.
double FScore(const ChrfStats& stats) {
  const double factor = kChrfBeta * kChrfBeta;
  double avg_prec = 0.0;
  double avg_rec = 0.0;
  int effective_order = 0;
  for (const OrderStats& s : stats) {
    if (s.hyp > 0 && s.ref > 0) {
      avg_prec += static_cast<double>(s.match) / static_cast<double>(s.hyp);
      avg_rec += static_cast<double>(s.match) / static_cast<double>(s.ref);
      ++effective_order;
    }
  }
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0.0) return 0.0;
  double score = (1 + factor) * avg_prec * avg_rec;
  score /= (factor * avg_prec) + avg_rec;
  return 100 * score;
}

}  // namespace

absl::StatusOr<ChrfScore> CorpusChrf(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references) {
  TFM_RETURN_IF_ERROR(CheckCorpusShape(hypotheses, references));
  ChrfStats total;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    const CharNgrams hyp = ExtractNgrams(hypotheses[i]);
    ChrfStats best;
    double best_f = -1.0;
    for (const std::vector<std::string>& reference_set : references) {
      const ChrfStats stats = MatchStats(hyp, ExtractNgrams(reference_set[i]));
      const double f = FScore(stats);
      if (f > best_f) {
        best_f = f;
        best = stats;
      }
    }
    for (int n = 0; n < kChrfCharOrder; ++n) {
      total[n].hyp += best[n].hyp;
      total[n].ref += best[n].ref;
      total[n].match += best[n].match;
    }
  }
  return ChrfScore{FScore(total)};
}

std::string ChrfScore::Format() const {
  return absl::StrFormat("chrF%d = %.2f", kChrfBeta, score);
}

std::string ChrfSignature(int num_refs) {
  return absl::StrCat("nrefs:", num_refs, "|case:mixed|eff:yes|nc:", kChrfCharOrder,
                      "|nw:0|space:no|version:", kSacreBleuVersion);
}

}  // namespace tfm
