#include "ops/matmul/matmul.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateMatMul(const KernelContext& context) {
  const bool backward = context.num_inputs() == 3;
  const Tensor& a = context.input(backward ? 1 : 0);
  const Tensor& b = context.input(backward ? 2 : 1);
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (context.input(i).dtype() != DType::kF32) return context.Error("inputs must be f32");
  }
  absl::StatusOr<MatMulDims> dims = MatMulDimsOf(a.shape(), b.shape(), context.attrs());
  if (!dims.ok()) return context.Error(dims.status().message());
  if (backward && context.input(0).shape() != dims->out_shape) {
    return context.Error(absl::StrCat("dout must have the output's shape ",
                                      ShapeToString(dims->out_shape)));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "matmul",
    .inputs = {"a", "b"},
    .outputs = {"out"},
    .attrs = {"transpose_a", "transpose_b"},
    .doc = "out[..., m, n] = op(a)[..., m, k] op(b)[..., k, n]",
    .validate = ValidateMatMul,
});

TFM_REGISTER_OP(OpDef{
    .name = "matmul_backward",
    .inputs = {"dout", "a", "b"},
    .outputs = {"da", "db"},
    .attrs = {"transpose_a", "transpose_b"},
    .doc = "gradients of sum(dout * matmul(a, b))",
    .validate = ValidateMatMul,
});

Attrs TransposeAttrs(bool transpose_a, bool transpose_b) {
  Attrs attrs;
  attrs.Set("transpose_a", transpose_a).Set("transpose_b", transpose_b);
  return attrs;
}

}  // namespace

absl::StatusOr<MatMulDims> MatMulDimsOf(const Shape& a, const Shape& b, const Attrs& attrs) {
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

absl::StatusOr<Tensor> MatMul(const Tensor& a, const Tensor& b, bool transpose_a,
                              bool transpose_b) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("matmul", {a, b}, TransposeAttrs(transpose_a, transpose_b)));
  return out[0];
}

absl::StatusOr<MatMulGrads> MatMulBackward(const Tensor& dout, const Tensor& a,
                                           const Tensor& b, bool transpose_a,
                                           bool transpose_b) {
  TFM_ASSIGN_OR_RETURN(
      std::vector<Tensor> out,
      RunOp("matmul_backward", {dout, a, b}, TransposeAttrs(transpose_a, transpose_b)));
  return MatMulGrads{out[0], out[1]};
}

}  // namespace tfm
