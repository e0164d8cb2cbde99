#include "ops/relu/relu.h"

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

absl::Status ValidateRelu(const KernelContext& context) {
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (context.input(i).shape() != context.input(0).shape()) {
      return context.Error("inputs must have one shape");
    }
  }
  return absl::OkStatus();
}

TFM_REGISTER_OP(OpDef{
    .name = "relu",
    .inputs = {"x"},
    .outputs = {"out"},
    .doc = "out = max(x, 0)",
    .validate = ValidateRelu,
    .kernel_dtype_inputs = {0},
});

TFM_REGISTER_OP(OpDef{
    .name = "relu_backward",
    .inputs = {"dout", "out"},
    .outputs = {"dx"},
    .attrs = {"scale"},
    .doc = "dx = dout * scale * (out > 0); scale defaults to 1",
    .validate = ValidateRelu,
    .kernel_dtype_inputs = {0, 1},
});

}  // namespace

absl::StatusOr<Tensor> Relu(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("relu", {x}));
  return out[0];
}

absl::StatusOr<Tensor> ReluBackward(const Tensor& dout, const Tensor& out, float scale) {
  Attrs attrs;
  if (scale != 1.0f) attrs.Set("scale", static_cast<double>(scale));
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> dx, RunOp("relu_backward", {dout, out}, attrs));
  return dx[0];
}

}  // namespace tfm
