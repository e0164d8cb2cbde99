// dropout: out = x * keep / (1 - p), where element i is kept when the
// Philox uniform number i of `state` is >= p (the numbers FillUniformCpu
// draws for the same state: block offset + i / 4, lane i % 4). The mask is
// never stored: backward regenerates it from the same state, so pass the
// same p and state to both (Generator::Reserve(x.num_elements()) hands out
// a fresh state per call). p = 0 is the identity, as a copy: an output never
// aliases an input (OpDef::in_place), so a layer in evaluation mode skips the
// call instead. p = 1 drops everything. f32 on every device; f16
// and bf16 on CUDA (computed in f32, with the same mask).
//
// Regenerating costs a Philox evaluation per 4 elements. A caller that would
// rather keep 1 bit per element (1/32 of the activation) takes
// DropoutWithMask: its packed mask lets DropoutBackwardMasked skip the
// generator. Both backwards give bit-identical results.
#ifndef TFM_OPS_DROPOUT_DROPOUT_H_
#define TFM_OPS_DROPOUT_DROPOUT_H_

#include "absl/status/statusor.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "ops/dropout/dropout_kernel_args.h"  // DropoutMaskWords.

namespace tfm {

absl::StatusOr<Tensor> Dropout(const Tensor& x, double p, const PhiloxState& state);

// Gradient of sum(dout * Dropout(x, p, state)): dout through the same mask.
absl::StatusOr<Tensor> DropoutBackward(const Tensor& dout, double p, const PhiloxState& state);

struct DropoutOutput {
  Tensor out;   // Dropout(x, p, state), exactly.
  Tensor mask;  // i32 [DropoutMaskWords(n)]: element i kept iff bit i % 32 of
                // word i / 32 is set; bits past the last element are 0.
};

absl::StatusOr<DropoutOutput> DropoutWithMask(const Tensor& x, double p, const PhiloxState& state);

// DropoutBackward from DropoutWithMask's mask (same p) instead of the state.
absl::StatusOr<Tensor> DropoutBackwardMasked(const Tensor& dout, double p, const Tensor& mask);

}  // namespace tfm

#endif  // TFM_OPS_DROPOUT_DROPOUT_H_
