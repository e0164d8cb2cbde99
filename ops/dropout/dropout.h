// dropout: out = x * keep / (1 - p), where element i is kept when the
// Philox uniform number i of `state` is >= p (the numbers FillUniformCpu
// draws for the same state: block offset + i / 4, lane i % 4). The mask is
// never stored: backward regenerates it from the same state, so pass the
// same p and state to both (Generator::Reserve(x.num_elements()) hands out
// a fresh state per call). p = 0 is the identity (out is x itself, no copy);
// p = 1 drops everything. Evaluation mode is p = 0. f32 only for now.
#ifndef TFM_OPS_DROPOUT_DROPOUT_H_
#define TFM_OPS_DROPOUT_DROPOUT_H_

#include "absl/status/statusor.h"
#include "core/rng.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Dropout(const Tensor& x, double p, const PhiloxState& state);

// Gradient of sum(dout * Dropout(x, p, state)): dout through the same mask.
absl::StatusOr<Tensor> DropoutBackward(const Tensor& dout, double p, const PhiloxState& state);

}  // namespace tfm

#endif  // TFM_OPS_DROPOUT_DROPOUT_H_
