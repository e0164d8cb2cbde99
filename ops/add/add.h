// add: out = a + b, the residual connection, with b optionally broadcast over
// a's leading axes (b's shape a suffix of a's: a bias [d] added to [..., d]).
// Backward: da is a copy of dout; db is a copy of dout too when the shapes
// match, else dout summed over the broadcast axes. Copies, because an output
// never aliases an input (OpDef::in_place): a caller accumulating into da must
// not change dout or db. A layer that only needs da = dout skips the call;
// one that needs db alone (a bias, learned positions) calls SumToShape, the
// work PyTorch's autograd does for `x + bias` (it hands dout on as dx).
// f32 on every device; f16 and bf16 on CUDA (computed in f32).
#ifndef TFM_OPS_ADD_ADD_H_
#define TFM_OPS_ADD_ADD_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> Add(const Tensor& a, const Tensor& b);

struct AddGrads {
  Tensor da;  // A copy of dout.
  Tensor db;  // Shaped like b.
};

// Gradients of sum(dout * Add(a, b)); only b's shape matters, so b is passed.
absl::StatusOr<AddGrads> AddBackward(const Tensor& dout, const Tensor& b);

// db alone: dout summed over the axes b was broadcast over (a copy of dout
// when the shapes match). Equals AddBackward(dout, b).db.
absl::StatusOr<Tensor> SumToShape(const Tensor& dout, const Tensor& b);

}  // namespace tfm

#endif  // TFM_OPS_ADD_ADD_H_
