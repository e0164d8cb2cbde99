#include "ops/softmax/softmax.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateSoftmax(const KernelContext& context) {
  const Tensor& x = context.input(0);
  if (x.rank() < 1) return context.Error("x needs at least one axis");
  return absl::OkStatus();
}

absl::Status ValidateMaskedSoftmax(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateSoftmax(context));
  const Tensor& x = context.input(0);
  const Tensor& mask = context.input(1);
  if (mask.dtype() != DType::kF32 && mask.dtype() != DType::kI32) {
    return context.Error("mask must be f32 (additive) or i32 (nonzero removes)");
  }
  bool broadcasts = mask.rank() >= 1 && mask.rank() <= x.rank() && mask.dim(-1) == x.dim(-1);
  for (int axis = 1; broadcasts && axis < mask.rank(); ++axis) {
    const int64_t extent = mask.dim(-1 - axis);
    broadcasts = extent == 1 || extent == x.dim(-1 - axis);
  }
  if (!broadcasts) return context.Error("mask does not broadcast to x over x's last axis");
  return absl::OkStatus();
}

absl::Status ValidateSoftmaxBackward(const KernelContext& context) {
  TFM_RETURN_IF_ERROR(ValidateSoftmax(context));
  if (context.input(1).shape() != context.input(0).shape()) {
    return context.Error("dout and out must have one shape");
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "softmax",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "out = exp(x) / sum(exp(x)) over the last axis",
    .validate = ValidateSoftmax,
});

TFM_REGISTER_OP(OpDef{
    .name = "masked_softmax",
    .inputs = {"x", "mask"},
    .outputs = {"out"},
    .doc = "softmax(x + mask) (f32 mask) or softmax of x without the positions where "
           "mask != 0 (i32 mask); fully removed rows give zeros",
    .validate = ValidateMaskedSoftmax,
});

TFM_REGISTER_OP(OpDef{
    .name = "log_softmax",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "out = x - log(sum(exp(x))) over the last axis",
    .validate = ValidateSoftmax,
});

TFM_REGISTER_OP(OpDef{
    .name = "softmax_backward",
    .inputs = {"dout", "out"},
    .outputs = {"dx"},
    .doc = "dx = out * (dout - sum(dout * out)) over the last axis",
    .validate = ValidateSoftmaxBackward,
    .kernel_dtype_inputs = {0, 1},
});

}  // namespace

absl::StatusOr<Tensor> Softmax(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("softmax", {x}));
  return out[0];
}

absl::StatusOr<Tensor> MaskedSoftmax(const Tensor& x, const Tensor& mask) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("masked_softmax", {x, mask}));
  return out[0];
}

absl::StatusOr<Tensor> LogSoftmax(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("log_softmax", {x}));
  return out[0];
}

absl::StatusOr<Tensor> SoftmaxBackward(const Tensor& dout, const Tensor& out) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> dx, RunOp("softmax_backward", {dout, out}));
  return dx[0];
}

}  // namespace tfm
