#include "ops/relu/relu.h"

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// f32 on every device; f16 and bf16 on CUDA only (the CPU kernels are f32).
absl::Status ValidateRelu(const KernelContext& context) {
  const DType dtype = context.input(0).dtype();
  const bool supported = dtype == DType::kF32 || (context.device().is_cuda() &&
                                                  (dtype == DType::kF16 || dtype == DType::kBF16));
  for (int i = 0; i < context.num_inputs(); ++i) {
    if (!supported || context.input(i).dtype() != dtype) {
      return context.Error("inputs must be f32 (or all f16 or bf16 on CUDA)");
    }
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
});

TFM_REGISTER_OP(OpDef{
    .name = "relu_backward",
    .inputs = {"dout", "out"},
    .outputs = {"dx"},
    .doc = "dx = dout * (out > 0)",
    .validate = ValidateRelu,
});

}  // namespace

absl::StatusOr<Tensor> Relu(const Tensor& x) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp("relu", {x}));
  return out[0];
}

absl::StatusOr<Tensor> ReluBackward(const Tensor& dout, const Tensor& out) {
  TFM_ASSIGN_OR_RETURN(std::vector<Tensor> dx, RunOp("relu_backward", {dout, out}));
  return dx[0];
}

}  // namespace tfm
