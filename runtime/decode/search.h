// Search strategies over an IncrementalModel: beam search (beam_search.h)
// and greedy search (greedy_search.h), both decoding many sentences at once.
// Sentences are sorted by length into batches (less padding, and the rows
// of a batch finish at similar steps); results come back in input order.
//
// Lengths and scores: a hypothesis takes at most max_length = source length
// + max_length_offset steps; it ends with eos (not part of its tokens) or is
// cut at max_length. log_prob sums the log-probabilities of every step it
// took (the eos included); score = log_prob / lp(steps) with the length
// penalty of options.length_penalty (length_penalty.h: GNMT's
// ((5 + n) / 6)^alpha by default, or n^alpha), which both strategies report
// and beam search ranks by.
#ifndef TFM_RUNTIME_DECODE_SEARCH_H_
#define TFM_RUNTIME_DECODE_SEARCH_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/config/task_config.pb.h"
#include "runtime/decode/decoding_constraint.h"
#include "runtime/decode/length_penalty.h"
#include "core/incremental_model.h"

namespace tfm {

struct Hypothesis {
  std::vector<int> tokens;  // Without bos and eos.
  double log_prob = 0;
  double score = 0;    // log_prob / lp(steps).
  bool ended = false;  // Ended with eos (else cut at the maximum length,
                       // or the empty output of an empty source).
};

// Best first: by score, ties by fewer tokens then smaller ids (so results do
// not depend on the order hypotheses finished in).
bool BetterHypothesis(const Hypothesis& a, const Hypothesis& b);

// A sentence's hypotheses, best first.
using NBestList = std::vector<Hypothesis>;

struct SearchOptions {
  int beam_size = 4;
  double length_penalty_alpha = 0.6;
  LengthPenaltyKind length_penalty = config::DecodeConfig::GNMT;
  int max_length_offset = 50;
  int batch_size = 64;  // Sentences per batch.
  // A batch's budget of padded source tokens times the beam (0: none; see
  // BatchesByLength).
  int64_t max_tokens = 0;
  // Batches searched side by side, each on its own thread with its loops
  // inline (decode.inter_threads; CPU models: see Search).
  int inter_threads = 1;
  int nbest = 1;        // Hypotheses returned per sentence (<= beam_size).
  // Consulted at every step for the tokens each hypothesis may take (not
  // owned; null: any token).
  const DecodingConstraint* constraint = nullptr;
  // Never end with eos: every hypothesis runs to its maximum length (eos's
  // log-probability is -infinity at every step, as Hugging Face's
  // min_new_tokens does), so a benchmark's sides all decode the same
  // number of steps whatever the weights (random ones included).
  bool ignore_eos = false;

  // The config's decode section.
  static SearchOptions FromConfig(const config::DecodeConfig& decode);
};

// Sentences sorted by length (`sorted_lengths`, ascending) cut into
// consecutive batches [begin, end): each holds at most `batch_size`
// sentences and, when max_tokens > 0, at most max_tokens padded source
// tokens times the beam (rows x its longest source x beam: what the
// encoder and the cross-attention of a beam step hold, as fairseq's
// --max-tokens counts a batch). A sentence over the budget alone is a
// batch of one.
std::vector<std::pair<size_t, size_t>> BatchesByLength(absl::Span<const int> sorted_lengths,
                                                       int batch_size, int64_t max_tokens,
                                                       int beam_size);

// With options.ignore_eos, sets eos's entry of one row of step
// log-probabilities to -infinity; else leaves it.
void ForbidEosIfIgnored(const SearchOptions& options, int eos_id, float* row_log_probs);

// Whether a search ranks each step where `model` ranks (StepTopK: rows x
// count numbers back instead of rows x vocabulary), under a constraint too
// (its allowed tokens sent along); TFM_CONSTRAINT_ON_HOST=1 keeps a
// constrained search on the host path, every step's whole distribution
// masked and ranked there (the GPU checks time one against the other).
bool RanksOnModel(const IncrementalModel& model, const SearchOptions& options);

class SearchStrategy {
 public:
  explicit SearchStrategy(const SearchOptions& options) : options_(options) {}
  virtual ~SearchStrategy() = default;

  // The n-best list of each source (id sequences as the model was trained
  // on), in input order. An empty source gives one empty hypothesis without
  // running the model.
  absl::StatusOr<std::vector<NBestList>> Search(IncrementalModel& model,
                                                absl::Span<const std::vector<int>> sources);

  // One batch as it is (every length >= 1): the n-best list of each row.
  virtual absl::StatusOr<std::vector<NBestList>> SearchBatch(IncrementalModel& model,
                                                             const SourceBatch& batch) = 0;

  const SearchOptions& options() const { return options_; }

 protected:
  // Steps allowed for a source of `length` tokens.
  int MaxLength(int length) const { return length + options_.max_length_offset; }
  // Row `row` of `batch` (its ids without padding).
  static absl::Span<const int> SourceOf(const SourceBatch& batch, int row) {
    return absl::MakeConstSpan(batch.ids.data() + static_cast<size_t>(row) * batch.length,
                               batch.lengths[row]);
  }
  Hypothesis Finish(std::vector<int> tokens, double log_prob, int steps, bool ended) const;

  SearchOptions options_;
};

// The strategy the decode section names, with its options; `constraint`
// (may be null) must outlive it.
absl::StatusOr<std::unique_ptr<SearchStrategy>> CreateSearchStrategy(
    const config::DecodeConfig& decode, const DecodingConstraint* constraint = nullptr);

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_SEARCH_H_
