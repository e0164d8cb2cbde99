#include "core/decode/decoding_constraint.h"

#include <algorithm>

namespace tfm {

void ConstraintRows::Reserve(std::vector<int32_t>& states, size_t values) {
  if (states.size() < values) states.resize(values);
}

void ConstraintRows::Start(int row, absl::Span<const int> source, int max_length) {
  if (constraint_ == nullptr) return;
  Reserve(current_, static_cast<size_t>(row + 1) * size_);
  constraint_->Start(source, max_length, current_.data() + static_cast<size_t>(row) * size_);
}

void ConstraintRows::Mask(int row, float* log_probs) const {
  if (constraint_ == nullptr) return;
  constraint_->Mask(current_.data() + static_cast<size_t>(row) * size_, log_probs);
}

void ConstraintRows::Extend(int slot, int from, int token) {
  if (constraint_ == nullptr) return;
  Reserve(next_, static_cast<size_t>(slot + 1) * size_);
  int32_t* state = next_.data() + static_cast<size_t>(slot) * size_;
  const int32_t* source = current_.data() + static_cast<size_t>(from) * size_;
  std::copy(source, source + size_, state);
  if (token >= 0) constraint_->Advance(token, state);
}

}  // namespace tfm
