#include "core/metrics/bleu.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/metrics/python_text.h"
#include "core/metrics/tokenizer_13a.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// N-grams of all orders keyed by their tokens joined with spaces: tokens hold
// no whitespace, so the key is unambiguous.
using NgramCounts = absl::flat_hash_map<std::string, int64_t>;

// Tokenizes `segment` as sacreBLEU does (trailing whitespace stripped first)
// and counts its n-grams; returns the token count.
int64_t CountNgrams(const std::string& segment, NgramCounts* counts) {
  const std::string tokenized = Tokenize13a(PythonRstrip(segment));
  const std::vector<absl::string_view> tokens = PythonSplit(tokenized);
  const int64_t length = static_cast<int64_t>(tokens.size());
  for (int n = 1; n <= kBleuMaxOrder; ++n) {
    for (int64_t i = 0; i + n <= length; ++i) {
      // Tokens are views into `tokenized`, so an n-gram is one contiguous
      // span of it; single spaces separate the tokens.
      const char* begin = tokens[i].data();
      const char* end = tokens[i + n - 1].data() + tokens[i + n - 1].size();
      ++(*counts)[absl::string_view(begin, end - begin)];
    }
  }
  return length;
}

int Order(absl::string_view ngram) {
  return 1 + static_cast<int>(std::count(ngram.begin(), ngram.end(), ' '));
}

// sacreBLEU's floor for log(0), so that a zero precision gives score 0.
double FlooredLog(double x) { return x == 0.0 ? -9999999999.0 : std::log(x); }

}  // namespace

absl::Status CheckCorpusShape(const std::vector<std::string>& hypotheses,
                              const std::vector<std::vector<std::string>>& references) {
  if (hypotheses.empty()) return absl::InvalidArgumentError("no hypothesis segments");
  if (references.empty()) return absl::InvalidArgumentError("no reference sets");
  for (size_t k = 0; k < references.size(); ++k) {
    if (references[k].size() != hypotheses.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("reference set ", k + 1, " has ", references[k].size(),
                       " segments but there are ", hypotheses.size(), " hypotheses"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<BleuScore> CorpusBleu(const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& references) {
  TFM_RETURN_IF_ERROR(CheckCorpusShape(hypotheses, references));
  BleuScore result;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    // Clipping counts: the most times each n-gram occurs in any one reference.
    NgramCounts max_ref_counts;
    std::vector<int64_t> ref_lengths;
    for (const std::vector<std::string>& reference_set : references) {
      NgramCounts counts;
      ref_lengths.push_back(CountNgrams(reference_set[i], &counts));
      for (const auto& [ngram, count] : counts) {
        int64_t& best = max_ref_counts[ngram];
        best = std::max(best, count);
      }
    }
    NgramCounts hyp_counts;
    const int64_t hyp_len = CountNgrams(hypotheses[i], &hyp_counts);

    // The closest reference length, the shorter on ties.
    int64_t closest = ref_lengths[0];
    for (int64_t length : ref_lengths) {
      const int64_t diff = std::llabs(hyp_len - length);
      const int64_t best_diff = std::llabs(hyp_len - closest);
      if (diff < best_diff || (diff == best_diff && length < closest)) closest = length;
    }
    result.hyp_len += hyp_len;
    result.ref_len += closest;

    for (const auto& [ngram, count] : hyp_counts) {
      const int n = Order(ngram) - 1;
      result.total[n] += count;
      auto it = max_ref_counts.find(ngram);
      if (it != max_ref_counts.end()) result.correct[n] += std::min(count, it->second);
    }
  }

  // The arithmetic follows sacreBLEU's compute_bleu() operation by operation
  // so that the double results, and thus the printed digits, are identical.
  if (result.hyp_len < result.ref_len) {
    result.brevity_penalty =
        result.hyp_len > 0
            ? std::exp(1.0 - static_cast<double>(result.ref_len) / result.hyp_len)
            : 0.0;
  } else {
    result.brevity_penalty = 1.0;
  }
  const bool any_correct =
      std::any_of(result.correct.begin(), result.correct.end(), [](int64_t c) { return c > 0; });
  if (!any_correct) return result;

  double smooth = 1.0;
  for (int n = 0; n < kBleuMaxOrder; ++n) {
    if (result.total[n] == 0) break;
    if (result.correct[n] == 0) {
      // 'exp' smoothing (mteval's): halve the pseudo-count at each order
      // without matches.
      smooth *= 2;
      result.precisions[n] = 100.0 / (smooth * static_cast<double>(result.total[n]));
    } else {
      result.precisions[n] = 100.0 * static_cast<double>(result.correct[n]) /
                             static_cast<double>(result.total[n]);
    }
  }
  double log_sum = 0.0;
  for (double precision : result.precisions) log_sum += FlooredLog(precision);
  result.score = result.brevity_penalty * std::exp(log_sum / kBleuMaxOrder);
  return result;
}

std::string BleuScore::Format() const {
  std::vector<std::string> precision_strings;
  for (double p : precisions) precision_strings.push_back(absl::StrFormat("%.1f", p));
  const double ratio = ref_len != 0 ? static_cast<double>(hyp_len) / ref_len : 0.0;
  return absl::StrFormat("BLEU = %.2f %s (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
                         score, absl::StrJoin(precision_strings, "/"), brevity_penalty, ratio,
                         hyp_len, ref_len);
}

std::string BleuSignature(int num_refs) {
  return absl::StrCat("nrefs:", num_refs, "|case:mixed|eff:no|tok:13a|smooth:exp|version:",
                      kSacreBleuVersion);
}

}  // namespace tfm
