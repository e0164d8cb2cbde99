// Greedy search: each sentence's one hypothesis takes the most probable
// token (the smallest id among equals) at every step until eos or its
// maximum length. Sentences that end leave the batch's decoder state.
#ifndef TFM_RUNTIME_DECODE_GREEDY_SEARCH_H_
#define TFM_RUNTIME_DECODE_GREEDY_SEARCH_H_

#include <vector>

#include "runtime/decode/search.h"

namespace tfm {

class GreedySearch : public SearchStrategy {
 public:
  explicit GreedySearch(const SearchOptions& options) : SearchStrategy(options) {}

  absl::StatusOr<std::vector<NBestList>> SearchBatch(IncrementalModel& model,
                                                     const SourceBatch& batch) override;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_GREEDY_SEARCH_H_
