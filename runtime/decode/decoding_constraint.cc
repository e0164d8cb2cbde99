#include "runtime/decode/decoding_constraint.h"

#include <algorithm>

namespace tfm {

void ConstraintRows::Start(int row, absl::Span<const int> source, int max_length) {
  if (constraint_ == nullptr) return;
  Reserve(current_, static_cast<size_t>(row + 1) * size_);
  Reserve(current_sources_, static_cast<size_t>(row + 1));
  current_sources_[row] = source;
  constraint_->Start(source, max_length, current_.data() + static_cast<size_t>(row) * size_);
}

void ConstraintRows::Mask(int row, float* log_probs) const {
  if (constraint_ == nullptr) return;
  constraint_->Mask(current_.data() + static_cast<size_t>(row) * size_, current_sources_[row],
                    log_probs);
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
