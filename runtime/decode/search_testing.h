// For tests that run both searches: the one `--beam=N` chooses for N.
#ifndef TFM_RUNTIME_DECODE_SEARCH_TESTING_H_
#define TFM_RUNTIME_DECODE_SEARCH_TESTING_H_

#include <memory>

#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/search.h"

namespace tfm {
namespace testing {

// Greedy search for options.beam_size 1, else beam search.
inline std::unique_ptr<SearchStrategy> SearchForBeamSize(const SearchOptions& options) {
  if (options.beam_size == 1) return std::make_unique<GreedySearch>(options);
  return std::make_unique<BeamSearch>(options);
}

}  // namespace testing
}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_SEARCH_TESTING_H_
