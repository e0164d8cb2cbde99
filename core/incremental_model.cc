#include "core/incremental_model.h"

#include <algorithm>

namespace tfm {

SourceBatch PadSources(absl::Span<const std::vector<int>* const> sentences, int pad_id,
                       int extra_columns) {
  SourceBatch batch;
  batch.size = static_cast<int>(sentences.size());
  for (const std::vector<int>* sentence : sentences) {
    batch.length = std::max(batch.length, static_cast<int>(sentence->size()));
  }
  batch.length += extra_columns;
  batch.ids.assign(static_cast<size_t>(batch.size) * batch.length, pad_id);
  for (int s = 0; s < batch.size; ++s) {
    const std::vector<int>& sentence = *sentences[s];
    std::copy(sentence.begin(), sentence.end(), batch.ids.begin() + s * batch.length);
    batch.lengths.push_back(static_cast<int>(sentence.size()));
  }
  return batch;
}

bool IsIdentity(absl::Span<const int> indices, int64_t n) {
  if (static_cast<int64_t>(indices.size()) != n) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (indices[i] != i) return false;
  }
  return true;
}

}  // namespace tfm
