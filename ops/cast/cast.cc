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

// Variadic: every entry's x (one dtype, the kernel's) to dtype, in one call
// (on CUDA one launch for a list of several).
TFM_REGISTER_OP(OpDef{
    .name = "cast",
    .inputs = {"x"},
    .outputs = {"out"},
    .attrs = {"dtype"},
    .doc = "out = x as dtype (round to nearest even when narrowing), for each x of a list",
    .validate = ValidateCast,
    .kernel_dtype_inputs = {0},
    .output_shapes = [](const KernelContext& context) -> absl::StatusOr<std::vector<Shape>> {
      std::vector<Shape> shapes;
      shapes.reserve(context.list_size());
      for (int entry = 0; entry < context.list_size(); ++entry) {
        shapes.push_back(context.list_input(entry, 0).shape());
      }
      return shapes;
    },
    .list_inputs = 1,
    .list_outputs = 1,
});

}  // namespace

absl::StatusOr<Tensor> Cast(const Tensor& x, DType dtype) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, CastAll({x}, dtype));
  return out[0];
}

absl::StatusOr<std::vector<Tensor>> CastAll(absl::Span<const Tensor> xs, DType dtype) {
  if (xs.empty()) return std::vector<Tensor>();
  Attrs attrs;
  attrs.Set("dtype", std::string(DTypeName(dtype)));
  return RunOp("cast", std::vector<Tensor>(xs.begin(), xs.end()), attrs);
}

}  // namespace tfm
