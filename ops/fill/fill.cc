#include "ops/fill/fill.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateFill(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       context.attrs().Get<std::vector<int64_t>>("shape"));
  TFM_RETURN_IF_ERROR(ValidateShape(Shape(shape.begin(), shape.end())));
  TFM_ASSIGN_OR_RETURN(double value, context.attrs().Get<double>("value"));
  const DType dtype = context.dtype();
  if (dtype == DType::kI8 || dtype == DType::kI32 || dtype == DType::kI64) {
    const double limit = dtype == DType::kI8    ? 128.0
                         : dtype == DType::kI32 ? 2147483648.0
                                                : 9223372036854775808.0;
    if (std::trunc(value) != value || value < -limit || value >= limit) {
      return context.Error(absl::StrCat("value ", value, " is not representable as ",
                                        DTypeName(dtype)));
    }
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "fill",
    .inputs = {},
    .outputs = {"out"},
    .attrs = {"shape", "value"},
    .doc = "out[...] = value",
    .validate = ValidateFill,
});

}  // namespace

absl::StatusOr<Tensor> Fill(const Shape& shape, double value, DType dtype,
                            const Device& device) {
  Attrs attrs;
  attrs.Set("shape", std::vector<int64_t>(shape.begin(), shape.end())).Set("value", value);
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                       RunOp("fill", {}, attrs, OpTarget{device, dtype}));
  return out[0];
}

}  // namespace tfm
