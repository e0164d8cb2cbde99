// softmax over the last axis, optionally masked, and log_softmax. Backward takes the
// forward's output: dx = out * (dout - sum(dout * out)).
//
// Masks (op "masked_softmax") broadcast to x: mask rank <= x rank, each of
// its trailing extents equal to x's or 1, the last equal to x's (e.g. a
// causal [t, t] mask against scores [b, h, t, t], or a padding mask
// [b, 1, 1, t]). Two kinds, told apart by dtype (there is no bool dtype):
//   f32: added to x before the softmax (0 keeps, -inf removes);
//   i32: nonzero removes the position, zero keeps it (the meaning of True
//        in torch.nn.Transformer's boolean masks).
// A row with every position removed yields zeros (PyTorch yields NaN): a
// padded query attends to nothing instead of poisoning the batch with NaNs.
// x, out and the gradients are f32, or bf16 or f16 on CUDA (computed in f32, one
// rounding at the store); masks are f32 or i32 whatever x's dtype.
#ifndef TFM_OPS_SOFTMAX_SOFTMAX_H_
#define TFM_OPS_SOFTMAX_SOFTMAX_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Softmax(const Tensor& x);

// `mask` is f32 (additive) or i32 (nonzero removes); see above.
absl::StatusOr<Tensor> MaskedSoftmax(const Tensor& x, const Tensor& mask);

// log(softmax(x)) over the last axis, computed as (x - max) - log(sum(exp(x
// - max))) so that it stays finite where softmax underflows to 0: the
// per-token log-probabilities a decoder's search adds up. No backward (no
// training path uses it).
absl::StatusOr<Tensor> LogSoftmax(const Tensor& x);

// Gradient of sum(dout * out) for out = (Masked)Softmax(x, ...).
absl::StatusOr<Tensor> SoftmaxBackward(const Tensor& dout, const Tensor& out);

}  // namespace tfm

#endif  // TFM_OPS_SOFTMAX_SOFTMAX_H_
