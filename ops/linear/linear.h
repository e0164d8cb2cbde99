// linear: out = x W^T + b over the last axis of x, as torch.nn.Linear.
//
// x is [..., in], weight [out, in], bias [out] (optional); out is [..., out].
// Two ops share one kernel: "linear" (x, weight, bias) and "linear_no_bias"
// (x, weight), since an op's inputs are fixed. Backward is
// "linear_backward" (dout, x, weight) -> (dx, dweight, dbias); with attribute
// bias=false it skips the bias reduction and dbias is an empty [0] tensor.
// "linear_backward_adding" (dout, x, weight, dx_sum) adds dx into dx_sum in
// place instead.
// The leading axes of x are flattened into one GEMM. f32 on every device,
// bf16 and f16 on CUDA (outputs of the inputs' dtype, or f32: LinearToF32).
#ifndef TFM_OPS_LINEAR_LINEAR_H_
#define TFM_OPS_LINEAR_LINEAR_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Linear(const Tensor& x, const Tensor& weight,
                              const std::optional<Tensor>& bias = std::nullopt);

// max(0, Linear(x, weight, bias)) in one op: on CUDA the GEMM's epilogue
// applies the ReLU (no second pass over the output). A NaN sum stays NaN on
// the CPU and through the CUDA kernel that follows a plain GEMM; cuBLASLt's
// ReLU epilogue (max(x, 0)) may give 0 for it instead. A NaN sum from a NaN
// input is still seen: the residual stream carries that input to the loss,
// so the training update is skipped. One from finite inputs whose sums
// overflow (inf - inf) may be hidden as 0 there: sums past 3.4e38 (f32
// accumulation in every dtype), far beyond what a model that trains holds.
absl::StatusOr<Tensor> LinearRelu(const Tensor& x, const Tensor& weight, const Tensor& bias);

// x weight^T in f32 whatever the dtype of x and weight (which agree): 16-bit
// operands accumulate in f32 and the sums are kept, not rounded to 16 bits.
// 16-bit decoding's logits: rounded to bf16 (8 bits) near-equal logits tie,
// and the ranking of a beam loses its order (and its speed: a tie at the
// cut sends the whole distribution to the host). f32 x is Linear(x, weight).
absl::StatusOr<Tensor> LinearToF32(const Tensor& x, const Tensor& weight);

struct LinearGrads {
  Tensor dx;       // Shaped like x.
  Tensor dweight;  // Shaped like weight.
  Tensor dbias;    // [out]; undefined when has_bias is false.
};

// Gradients of sum(dout * Linear(x, weight, bias)).
absl::StatusOr<LinearGrads> LinearBackward(const Tensor& dout, const Tensor& x,
                                           const Tensor& weight, bool has_bias = true);

// The same, with dx added into `dx_sum` (shaped like x; updated in place,
// the GEMM accumulating onto it) instead of made anew; the result's dx is
// dx_sum. For an input that feeds several projections: its gradient's sum
// without an add op (attention's q, k and v of one input).
absl::StatusOr<LinearGrads> LinearBackwardAdding(const Tensor& dout, const Tensor& x,
                                                 const Tensor& weight, const Tensor& dx_sum,
                                                 bool has_bias = true);

}  // namespace tfm

#endif  // TFM_OPS_LINEAR_LINEAR_H_
