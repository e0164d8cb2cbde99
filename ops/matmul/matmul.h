// matmul: batched matrix products, out = op(a) op(b), where op transposes
// the last two axes when asked. Backward gives da and db.
//
// a is [..., m, k] ([..., k, m] with transpose_a), b is [..., k, n]
// ([..., n, k] with transpose_b); both have the same rank (>= 2) and the same
// leading (batch) axes; out is [..., m, n]. f32 on every device, bf16 and f16
// on CUDA. For a weight shared across a batch, use linear (one large GEMM
// instead of many).
#ifndef TFM_OPS_MATMUL_MATMUL_H_
#define TFM_OPS_MATMUL_MATMUL_H_

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace tfm {

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, bool transpose_a = false,
                              bool transpose_b = false);

struct MatMulGrads {
  Tensor da;  // Shaped like a.
  Tensor db;  // Shaped like b.
};

// Gradients of sum(dout * MatMul(a, b, ...)).
absl::StatusOr<MatMulGrads> MatMulBackward(const Tensor& dout, const Tensor& a,
                                           const Tensor& b, bool transpose_a = false,
                                           bool transpose_b = false);

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_MATMUL_H_
