#include "ops/matmul/matmul.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/matmul_kernel_args.h"

namespace tfm {
namespace {

absl::Status ValidateMatMul(const KernelContext& context) {
  const bool backward = context.num_inputs() == 3;
  const Tensor& a = context.input(backward ? 1 : 0);
  const Tensor& b = context.input(backward ? 2 : 1);
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
    .kernel_dtype_inputs = {0, 1},
});

TFM_REGISTER_OP(OpDef{
    .name = "matmul_backward",
    .inputs = {"dout", "a", "b"},
    .outputs = {"da", "db"},
    .attrs = {"transpose_a", "transpose_b"},
    .doc = "gradients of sum(dout * matmul(a, b))",
    .validate = ValidateMatMul,
    .kernel_dtype_inputs = {0, 1, 2},
});

Attrs TransposeAttrs(bool transpose_a, bool transpose_b) {
  Attrs attrs;
  attrs.Set("transpose_a", transpose_a).Set("transpose_b", transpose_b);
  return attrs;
}

}  // namespace

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
