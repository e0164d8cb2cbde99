// Constrained decoding: a rule on which tokens a hypothesis may take next,
// consulted by beam and greedy search at every step (tree_constraint.h keeps
// parser outputs well-formed trees over the input's words).
//
// A hypothesis's constraint state is a fixed number of int32 values that the
// search stores for it in one flat array (rows x state_size()) and copies
// along when the beam reorders, so a step allocates nothing.
#ifndef TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_
#define TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tfm {

class DecodingConstraint {
 public:
  virtual ~DecodingConstraint() = default;

  // The int32 values one hypothesis's state takes.
  virtual int state_size() const = 0;

  // The state of the empty hypothesis for `source` (ids as the search takes
  // them, eos included) that may take up to `max_length` tokens, eos
  // included.
  virtual void Start(absl::Span<const int> source, int max_length, int32_t* state) const = 0;

  // Sets log_probs[token] to -infinity for every token (of the model's
  // vocabulary, in the order of its ids) the hypothesis may not take next.
  // At least one token stays allowed while the hypothesis has not ended.
  // `source` is the one Start saw (a parser copies words from it).
  virtual void Mask(const int32_t* state, absl::Span<const int> source,
                    float* log_probs) const = 0;

  // The state after the hypothesis takes `token` (one Mask allowed).
  virtual void Advance(int token, absl::Span<const int> source, int32_t* state) const = 0;
};

// The constraint states of a search's rows, current and next, with the
// source each row's hypothesis translates (a span of the search's batch,
// which outlives the search); with no constraint every call does nothing.
// Buffers grow to the batch's rows once and are reused from then on.
class ConstraintRows {
 public:
  explicit ConstraintRows(const DecodingConstraint* constraint)
      : constraint_(constraint), size_(constraint ? constraint->state_size() : 0) {}

  // Current row `row` starts the empty hypothesis of `source`.
  void Start(int row, absl::Span<const int> source, int max_length);
  void Mask(int row, float* log_probs) const;
  // Next row `slot` continues current row `from` with `token` (< 0: a copy
  // with no token, for rows that are dead).
  void Extend(int slot, int from, int token);
  // The next rows become the current ones.
  void Swap() {
    current_.swap(next_);
    current_sources_.swap(next_sources_);
  }

 private:
  template <typename T>
  static void Reserve(std::vector<T>& values, size_t size) {
    if (values.size() < size) values.resize(size);
  }

  const DecodingConstraint* constraint_;
  int size_;
  std::vector<int32_t> current_, next_;
  std::vector<absl::Span<const int>> current_sources_, next_sources_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_
