#include "ops/linear/linear.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// x's shape with the last extent weight's out-features, for the forward's
// output and the backward's dout.
Shape LinearOutputShape(const Tensor& x, const Tensor& weight) {
  Shape shape = x.shape();
  shape.back() = weight.dim(0);
  return shape;
}

// x [..., in] against weight [out, in]; `first` is x's input index.
absl::Status ValidateXAndWeight(const KernelContext& context, int first) {
  const Tensor& x = context.input(first);
  const Tensor& weight = context.input(first + 1);
  if (x.rank() < 1 || weight.rank() != 2) {
    return context.Error("x must have rank >= 1 and weight rank 2");
  }
  if (x.dim(-1) != weight.dim(1)) {
    return context.Error(absl::StrCat("x's last extent ", x.dim(-1),
                                      " differs from weight's in-features ", weight.dim(1)));
  }
  return absl::OkStatus();
}

absl::Status ValidateLinear(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateXAndWeight(context, 0));
  TFM_ASSIGN_OR_RETURN(const bool f32_out, context.attrs().GetOr<bool>("f32_out", false));
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  // The attributes of linear_no_bias (f32_out) and linear (relu) do not mix:
  // an f32 output takes no epilogue on CUDA.
  if (f32_out && (relu || context.num_inputs() == 3)) {
    return context.Error("f32_out takes no bias and no relu (linear_no_bias only)");
  }
  if (context.num_inputs() == 3 && context.input(2).shape() != Shape{context.input(1).dim(0)}) {
    return context.Error("bias must be [out_features]");
  }
  return absl::OkStatus();
}

absl::Status ValidateLinearBackward(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateXAndWeight(context, 1));
  TFM_RETURN_IF_ERROR(context.attrs().GetOr<bool>("bias", true).status());
  const Shape out_shape = LinearOutputShape(context.input(1), context.input(2));
  if (context.input(0).shape() != out_shape) {
    return context.Error(absl::StrCat("dout must be ", ShapeToString(out_shape)));
  }
  return absl::OkStatus();
}

// linear_backward's checks, and dx_sum shaped like x.
absl::Status ValidateLinearBackwardAdding(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateLinearBackward(context));
  if (context.input(3).shape() != context.input(1).shape()) {
    return context.Error(
        absl::StrCat("dx_sum must be shaped like x, ", ShapeToString(context.input(1).shape())));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shape>> LinearOutputShapes(const KernelContext& context) {
  return std::vector<Shape>{LinearOutputShape(context.input(0), context.input(1))};
}

// dx, dweight, and dbias: [out_features], or [0] without a bias.
absl::StatusOr<std::vector<Shape>> LinearBackwardOutputShapes(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const bool has_bias, context.attrs().GetOr<bool>("bias", true));
  const Tensor& weight = context.input(2);
  return std::vector<Shape>{context.input(1).shape(), weight.shape(),
                            Shape{has_bias ? weight.dim(0) : 0}};
}

TFM_REGISTER_OP(OpDef{
    .name = "linear",
    .inputs = {"x", "weight", "bias"},
    .outputs = {"out"},
    .attrs = {"relu"},
    .doc = "out = x weight^T + bias; relu: max(0, out) (one pass: a GEMM epilogue on CUDA)",
    .validate = ValidateLinear,
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = LinearOutputShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "linear_no_bias",
    .inputs = {"x", "weight"},
    .outputs = {"out"},
    .attrs = {"f32_out"},
    .doc = "out = x weight^T; f32_out: out in f32 whatever x's dtype (the f32 sums unrounded)",
    .validate = ValidateLinear,
    .kernel_dtype_inputs = {0, 1},
    .output_shapes = LinearOutputShapes,
});

TFM_REGISTER_OP(OpDef{
    .name = "linear_backward",
    .inputs = {"dout", "x", "weight"},
    .outputs = {"dx", "dweight", "dbias"},
    .attrs = {"bias"},
    .doc = "gradients of sum(dout * linear(x, weight, bias)); dbias is [0] if bias=false",
    .validate = ValidateLinearBackward,
    .kernel_dtype_inputs = {0, 1, 2},
    .output_shapes = LinearBackwardOutputShapes,
});

// An input that feeds several projections (attention's memory feeds its
// keys and values) takes its gradient as one sum: each product adds into it
// in its GEMM (beta 1), with no add op and one rounding per element.
TFM_REGISTER_OP(OpDef{
    .name = "linear_backward_adding",
    .inputs = {"dout", "x", "weight", "dx_sum"},
    .outputs = {"dx_sum", "dweight", "dbias"},
    .attrs = {"bias"},
    .doc = "linear_backward with dx added into dx_sum in place; dbias is [0] if bias=false",
    .validate = ValidateLinearBackwardAdding,
    .kernel_dtype_inputs = {0, 1, 2, 3},
    .output_shapes = LinearBackwardOutputShapes,
    .in_place = {{0, 3}},
});

}  // namespace

absl::StatusOr<Tensor> Linear(const Tensor& x, const Tensor& weight,
                              const std::optional<Tensor>& bias) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       bias.has_value() ? RunOp("linear", {x, weight, *bias})
                                        : RunOp("linear_no_bias", {x, weight}));
  return out[0];
}

absl::StatusOr<Tensor> LinearRelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Attrs attrs;
  attrs.Set("relu", true);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("linear", {x, weight, bias}, attrs));
  return out[0];
}

absl::StatusOr<Tensor> LinearToF32(const Tensor& x, const Tensor& weight) {
  Attrs attrs;
  attrs.Set("f32_out", true);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("linear_no_bias", {x, weight}, attrs));
  return out[0];
}

absl::StatusOr<LinearGrads> LinearBackward(const Tensor& dout, const Tensor& x,
                                           const Tensor& weight, bool has_bias) {
  Attrs attrs;
  attrs.Set("bias", has_bias);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("linear_backward", {dout, x, weight}, attrs));
  return LinearGrads{out[0], out[1], has_bias ? out[2] : Tensor()};
}

absl::StatusOr<LinearGrads> LinearBackwardAdding(const Tensor& dout, const Tensor& x,
                                                 const Tensor& weight, const Tensor& dx_sum,
                                                 bool has_bias) {
  Attrs attrs;
  attrs.Set("bias", has_bias);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("linear_backward_adding", {dout, x, weight, dx_sum}, attrs));
  return LinearGrads{out[0], out[1], has_bias ? out[2] : Tensor()};
}

}  // namespace tfm
