#include "runtime/decode/decoding_constraint.h"

#include <algorithm>
#include <limits>

#include "core/thread_pool.h"

namespace tfm {

void MaskForbidden(const uint32_t* allowed, int64_t vocabulary, float* log_probs) {
  constexpr float kForbidden = -std::numeric_limits<float>::infinity();
  for (int64_t word = 0; word < BitRowWords(vocabulary); ++word) {
    const uint32_t bits = allowed[word];
    if (bits == ~0u) continue;
    const int64_t first = word * 32;
    const int64_t end = std::min<int64_t>(vocabulary, first + 32);
    for (int64_t token = first; token < end; ++token) {
      if (!((bits >> (token - first)) & 1u)) log_probs[token] = kForbidden;
    }
  }
}

void ConstraintRows::Start(int row, absl::Span<const int> source, int max_length) {
  if (constraint_ == nullptr) return;
  Reserve(current_, static_cast<size_t>(row + 1) * size_);
  Reserve(current_sources_, static_cast<size_t>(row + 1));
  current_sources_[row] = source;
  constraint_->Start(source, max_length, current_.data() + static_cast<size_t>(row) * size_);
}

absl::Span<const uint32_t> ConstraintRows::AllowedRows(int rows) {
  if (constraint_ == nullptr) return {};
  Reserve(allowed_, static_cast<size_t>(rows) * words_);
  ThreadPool::Default()->ParallelFor(rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      constraint_->AllowedTokens(current_.data() + static_cast<size_t>(row) * size_,
                                 current_sources_[row], allowed_.data() + row * words_);
    }
  });
  return absl::MakeConstSpan(allowed_.data(), static_cast<size_t>(rows) * words_);
}

void ConstraintRows::Mask(int row, float* log_probs) const {
  if (constraint_ == nullptr) return;
  MaskForbidden(allowed_.data() + static_cast<size_t>(row) * words_,
                constraint_->vocabulary_size(), log_probs);
}

void ConstraintRows::Extend(int slot, int from, int token) {
  if (constraint_ == nullptr) return;
  Reserve(next_, static_cast<size_t>(slot + 1) * size_);
  Reserve(next_sources_, static_cast<size_t>(slot + 1));
  int32_t* state = next_.data() + static_cast<size_t>(slot) * size_;
  const int32_t* previous = current_.data() + static_cast<size_t>(from) * size_;
  std::copy(previous, previous + size_, state);
  next_sources_[slot] = current_sources_[from];
  if (token >= 0) constraint_->Advance(token, next_sources_[slot], state);
}

}  // namespace tfm
