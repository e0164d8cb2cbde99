// matmul: batched matrix products, out = op(a) op(b), where op transposes
// the last two axes when asked. Backward gives da and db.
//
// a is [..., m, k] ([..., k, m] with transpose_a), b is [..., k, n]
// ([..., n, k] with transpose_b); both have the same rank (>= 2) and the same
// leading (batch) axes; out is [..., m, n]. f32 only for now. For a weight
// shared across a batch, use linear (one large GEMM instead of many).
#ifndef TFM_OPS_MATMUL_MATMUL_H_
#define TFM_OPS_MATMUL_MATMUL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/attrs.h"
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

// The extents of one call, shared by validation and every device's kernels.
struct MatMulDims {
  int64_t batch = 1;  // Product of the leading axes.
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  Shape out_shape;
};

// Reads the transpose attributes and checks a and b against each other.
absl::StatusOr<MatMulDims> MatMulDimsOf(const Shape& a, const Shape& b, const Attrs& attrs);

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_MATMUL_H_
