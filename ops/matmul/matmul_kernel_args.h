// What the matmul kernels of every device (and the validation) derive from a
// call: its extents, and the products of its backward.
#ifndef TFM_OPS_MATMUL_MATMUL_KERNEL_ARGS_H_
#define TFM_OPS_MATMUL_MATMUL_KERNEL_ARGS_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/attrs.h"
#include "core/shape.h"
#include "core/status_macros.h"

namespace tfm {

struct MatMulDims {
  int64_t batch = 1;  // Product of the leading axes.
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false, transpose_b = false;
  Shape out_shape;
};

// Reads the transpose attributes and checks a and b against each other.
inline absl::StatusOr<MatMulDims> MatMulDimsOf(const Shape& a, const Shape& b, const Attrs& attrs) {
  MatMulDims dims;
  TFM_ASSIGN_OR_RETURN(dims.transpose_a, attrs.GetOr<bool>("transpose_a", false));
  TFM_ASSIGN_OR_RETURN(dims.transpose_b, attrs.GetOr<bool>("transpose_b", false));
  if (a.size() < 2 || a.size() != b.size()) {
    return absl::InvalidArgumentError("a and b need the same rank, at least 2");
  }
  const size_t rank = a.size();
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a[i] != b[i]) return absl::InvalidArgumentError("batch axes of a and b differ");
    dims.batch *= a[i];
    dims.out_shape.push_back(a[i]);
  }
  dims.m = dims.transpose_a ? a[rank - 1] : a[rank - 2];
  dims.k = dims.transpose_a ? a[rank - 2] : a[rank - 1];
  const int64_t b_k = dims.transpose_b ? b[rank - 1] : b[rank - 2];
  dims.n = dims.transpose_b ? b[rank - 2] : b[rank - 1];
  if (b_k != dims.k) {
    return absl::InvalidArgumentError(
        absl::StrCat("inner extents differ: ", dims.k, " (a) vs ", b_k, " (b)"));
  }
  dims.out_shape.push_back(dims.m);
  dims.out_shape.push_back(dims.n);
  return dims;
}

// One product of the backward on every batch entry: grad[m, n] =
// op(first) op(second), where op transposes when trans_first (trans_second)
// is set, as GemmCpu and GemmCuda take their operands.
struct MatMulGradProduct {
  enum class Operand { kDout, kA, kB };  // matmul_backward's input indices.
  Operand first, second;
  bool trans_first, trans_second;
  int64_t m, n, k;
};

// The products giving da and db, in that order. With C = op(A) op(B):
//   dA = dC op(B)^T, stored transposed (= op(B) dC^T) when A is;
//   dB = op(A)^T dC, stored transposed (= dC^T op(A)) when B is.
inline std::array<MatMulGradProduct, 2> MatMulGradProducts(const MatMulDims& d) {
  using Operand = MatMulGradProduct::Operand;
  const MatMulGradProduct da =
      d.transpose_a
          ? MatMulGradProduct{Operand::kB, Operand::kDout, d.transpose_b, true, d.k, d.m, d.n}
          : MatMulGradProduct{Operand::kDout, Operand::kB, false, !d.transpose_b, d.m, d.k, d.n};
  const MatMulGradProduct db =
      d.transpose_b
          ? MatMulGradProduct{Operand::kDout, Operand::kA, true, d.transpose_a, d.n, d.k, d.m}
          : MatMulGradProduct{Operand::kA, Operand::kDout, !d.transpose_a, false, d.k, d.n, d.m};
  return {da, db};
}

// Elements of one batch entry of `operand`: dout is [m, n], a [m, k], b [k, n].
inline int64_t MatMulEntrySize(const MatMulDims& d, MatMulGradProduct::Operand operand) {
  switch (operand) {
    case MatMulGradProduct::Operand::kDout:
      return d.m * d.n;
    case MatMulGradProduct::Operand::kA:
      return d.m * d.k;
    case MatMulGradProduct::Operand::kB:
      break;
  }
  return d.k * d.n;
}

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_MATMUL_KERNEL_ARGS_H_
