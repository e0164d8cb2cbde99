// Beam search (Wu et al. 2016; Vaswani et al. 2017, section 6.1: beam 4,
// alpha 0.6, maximum length input + 50) over a batch of sentences, beam_size
// rows per sentence in one decoder state.
//
// Each step ranks, per sentence, every extension of its live hypotheses by
// total log-probability and looks at the best 2 * beam_size: an eos among
// the first beam_size finishes its hypothesis (length-penalised score), and
// the best beam_size others become the next live hypotheses (2 * beam_size
// always leaves beam_size that are not eos). At the first step only one row
// per sentence is live (all rows hold the same bos).
//
// A sentence stops when
//   - beam_size hypotheses have finished (the beam has spent itself, as in
//     fairseq; this is also what makes beam size 1 greedy search), or
//   - its nbest-th best finished score is at least the best that any live
//     hypothesis can still reach: log-probabilities only fall, and with
//     alpha >= 0 the penalty grows with length, so a live hypothesis with
//     log-probability p ends with a score of at most p / lp(max_length)
//     (tensor2tensor's bound), or
//   - it reaches its maximum length: live hypotheses finish there, cut.
// The n-best list is the best nbest finished hypotheses by score.
#ifndef TFM_RUNTIME_DECODE_BEAM_SEARCH_H_
#define TFM_RUNTIME_DECODE_BEAM_SEARCH_H_

#include <vector>

#include "runtime/decode/search.h"

namespace tfm {

class BeamSearch : public SearchStrategy {
 public:
  explicit BeamSearch(const SearchOptions& options) : SearchStrategy(options) {}

  absl::StatusOr<std::vector<NBestList>> SearchBatch(IncrementalModel& model,
                                                     const SourceBatch& batch) override;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_BEAM_SEARCH_H_
