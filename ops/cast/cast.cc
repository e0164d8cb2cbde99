#include "ops/cast/cast.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

absl::Status ValidateCast(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::string name, context.attrs().Get<std::string>("dtype"));
  TFM_ASSIGN_OR_RETURN(DType dtype, ParseDType(name));
  if (!IsFloating(dtype) || !IsFloating(context.input(0).dtype())) {
    return context.Error(absl::StrCat("casts between f32, f16 and bf16, not from ",
                                      DTypeName(context.input(0).dtype()), " to ", name));
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "cast",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"dtype"},
    .doc = "out = x as dtype (round to nearest even when narrowing)",
    .validate = ValidateCast,
    .kernel_dtype_inputs = {0},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      return std::vector<Shape>{context.input(0).shape()};
    },
});

}  // namespace

absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype) {
  Attrs attrs;
  attrs.Set("dtype", std::string(DTypeName(dtype)));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("cast", {x}, attrs));
  return out[0];
}

}  // namespace tfm
