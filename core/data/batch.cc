#include "core/data/batch.h"

#include <numeric>

namespace tfm {

int64_t Batch::source_tokens() const {
  return std::accumulate(source_lengths.begin(), source_lengths.end(), int64_t{0});
}

int64_t Batch::target_tokens() const {
  return std::accumulate(target_lengths.begin(), target_lengths.end(), int64_t{0});
}

void BatchStats::Add(const Batch& batch) {
  ++batches;
  examples += batch.size;
  source_tokens += batch.source_tokens();
  target_tokens += batch.target_tokens();
  padded_source_tokens += int64_t{batch.size} * batch.source_length;
  padded_target_tokens += int64_t{batch.size} * batch.target_length;
}

double BatchStats::PaddingWaste() const {
  const int64_t positions = padded_source_tokens + padded_target_tokens;
  if (positions == 0) return 0.0;
  return 1.0 - static_cast<double>(source_tokens + target_tokens) / positions;
}

}  // namespace tfm
