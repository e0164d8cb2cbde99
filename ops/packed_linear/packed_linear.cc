#include "ops/packed_linear/packed_linear.h"

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidatePack(const KernelContext& context) {
  const Tensor& weight = context.input(0);
  if (weight.rank() != 2) return context.Error("weight must be [out, in]");
  return absl::OkStatus();
}

absl::Status ValidatePackedLinear(const KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t out, context.attrs().Get<int64_t>("out_features"));
  TFM_RETURN_IF_ERROR(context.attrs().GetOr<bool>("relu", false).status());
  if (x.rank() < 1 || packed.rank() != 3 || x.dim(-1) != packed.dim(1)) {
    return context.Error("x must be [..., in] and packed [panels, in, width]");
  }
  const int64_t panels = packed.dim(0), width = packed.dim(2);
  if (out < 1 || out > panels * width || out <= (panels - 1) * width) {
    return context.Error(absl::StrCat("out_features ", out, " does not fill ", panels,
                                      " panels of ", width, " columns"));
  }
  if (context.num_inputs() == 3) {
    const Tensor& bias = context.input(2);
    if (bias.rank() != 1 || bias.dim(0) != out) return context.Error("bias must be [out_features]");
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "pack_linear_weight",
    .inputs = {"weight"},
    .outputs = {"packed"},
    .doc = "weight [out, in] laid out as [panels, in, width] for packed_linear (this process's "
           "instruction set)",
    .validate = ValidatePack,
});

TFM_REGISTER_OP(OpDef{
    .name = "packed_linear",
    .inputs = {"x", "packed", "bias"},
    .outputs = {"out"},
    .attrs = {"out_features", "relu"},
    .doc = "x W^T + b with W packed by pack_linear_weight (relu: then max(0, .))",
    .validate = ValidatePackedLinear,
    .kernel_dtype_inputs = {0, 1, 2},
});

TFM_REGISTER_OP(OpDef{
    .name = "packed_linear_no_bias",
    .inputs = {"x", "packed"},
    .outputs = {"out"},
    .attrs = {"out_features", "relu"},
    .doc = "x W^T with W packed by pack_linear_weight (relu: then max(0, .))",
    .validate = ValidatePackedLinear,
    .kernel_dtype_inputs = {0, 1},
});

}  // namespace

bool PackedLinearSupported(const Tensor& weight) {
  return weight.defined() && weight.device().is_cpu() && weight.dtype() == DType::kF32 &&
         weight.rank() == 2;
}

absl::StatusOr<Tensor> PackLinearWeight(const Tensor& weight) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("pack_linear_weight", {weight}));
  return out[0];
}

absl::StatusOr<Tensor> PackedLinear(const Tensor& x, const Tensor& packed, int64_t out_features,
                                    const std::optional<Tensor>& bias, bool relu) {
  Attrs attrs;
  attrs.Set("out_features", out_features);
  if (relu) attrs.Set("relu", true);
  if (bias.has_value()) {
    TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                         RunOp("packed_linear", {x, packed, *bias}, attrs));
    return out[0];
  }
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("packed_linear_no_bias", {x, packed}, attrs));
  return out[0];
}

}  // namespace tfm
