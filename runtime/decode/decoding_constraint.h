// Constrained decoding: a rule on which tokens a hypothesis may take next,
// consulted by beam and greedy search at every step (tree_constraint.h keeps
// parser outputs well-formed trees over the input's words).
//
// A hypothesis's constraint state is a fixed number of int32 values that the
// search stores for it in one flat array (rows x state_size()) and copies
// along when the beam reorders, so a step allocates nothing.
//
// The tokens a hypothesis may take next come as a row of bits
// (core/bit_rows.h), not as a masked distribution: a search whose model
// ranks on its device (IncrementalModel::StepTopK) sends the bits there,
// vocabulary / 8 bytes a row, instead of bringing every row's distribution
// to the host to mask it; the host path masks with the same bits
// (MaskForbidden).
#ifndef TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_
#define TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/bit_rows.h"

namespace tfm {

class DecodingConstraint {
 public:
  virtual ~DecodingConstraint() = default;

  // The int32 values one hypothesis's state takes.
  virtual int state_size() const = 0;

  // The tokens the constraint rules on: the model's vocabulary, in the
  // order of its ids.
  virtual int64_t vocabulary_size() const = 0;

  // The state of the empty hypothesis for `source` (ids as the search takes
  // them, eos included) that may take up to `max_length` tokens, eos
  // included.
  virtual void Start(absl::Span<const int> source, int max_length, int32_t* state) const = 0;

  // Writes the tokens the hypothesis may take next into `allowed`,
  // BitRowWords(vocabulary_size()) words: a token's bit set when it may
  // come, clear when not (and the bits past the vocabulary clear). At least
  // one token stays allowed while the hypothesis has not ended. `source` is
  // the one Start saw (a parser copies words from it).
  virtual void AllowedTokens(const int32_t* state, absl::Span<const int> source,
                             uint32_t* allowed) const = 0;

  // The state after the hypothesis takes `token` (one AllowedTokens
  // allowed).
  virtual void Advance(int token, absl::Span<const int> source, int32_t* state) const = 0;
};

// Sets log_probs[t] to -infinity for every token t < vocabulary whose bit
// `allowed` clears.
void MaskForbidden(const uint32_t* allowed, int64_t vocabulary, float* log_probs);

// The constraint states of a search's rows, current and next, with the
// source each row's hypothesis translates (a span of the search's batch,
// which outlives the search); with no constraint every call does nothing.
// Buffers grow to the batch's rows once and are reused from then on.
class ConstraintRows {
 public:
  explicit ConstraintRows(const DecodingConstraint* constraint)
      : constraint_(constraint),
        size_(constraint ? constraint->state_size() : 0),
        words_(constraint ? BitRowWords(constraint->vocabulary_size()) : 0) {}

  bool active() const { return constraint_ != nullptr; }

  // Current row `row` starts the empty hypothesis of `source`.
  void Start(int row, absl::Span<const int> source, int max_length);
  // Computes this step's allowed tokens of current rows [0, rows)
  // (DecodingConstraint::AllowedTokens), row after row, the rows spread
  // over the default thread pool: what a model's StepTopK ranks among, and
  // what Mask masks with. Empty without a constraint; valid until the next
  // call.
  absl::Span<const uint32_t> AllowedRows(int rows);
  // Masks current row `row`'s step log-probabilities on the host with its
  // bits from this step's AllowedRows. Rows may be masked from several
  // threads at once.
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
  int64_t words_;  // Of a row's allowed bits.
  std::vector<int32_t> current_, next_;
  std::vector<uint32_t> allowed_;  // rows x words_.
  std::vector<absl::Span<const int>> current_sources_, next_sources_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_DECODE_DECODING_CONSTRAINT_H_
