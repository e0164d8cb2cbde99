// Registers relu's CUDA kernels (linked only in builds with CUDA): f32, f16
// and bf16.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/relu/relu_cuda.h"

namespace tfm {
namespace {

absl::Status LaunchStatus(const KernelContext& context, const char* error) {
  if (error == nullptr) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
}

template <typename T>
absl::Status ReluCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  return LaunchStatus(
      context, LaunchRelu<T>(x.data<T>(), out->data<T>(), x.num_elements(), context.stream()));
}

template <typename T>
absl::Status ReluBackwardCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), dout.dtype()));
  return LaunchStatus(
      context, LaunchReluBackward<T>(dout.data<T>(), context.input(1).data<T>(), dx->data<T>(),
                                     dout.num_elements(), context.stream()));
}

#define TFM_REGISTER_RELU_CUDA(dtype, T)                              \
  TFM_REGISTER_KERNEL("relu", DeviceType::kCUDA, dtype, ReluCuda<T>); \
  TFM_REGISTER_KERNEL("relu_backward", DeviceType::kCUDA, dtype, ReluBackwardCuda<T>)
TFM_REGISTER_RELU_CUDA(DType::kF32, float);
TFM_REGISTER_RELU_CUDA(DType::kF16, Half);
TFM_REGISTER_RELU_CUDA(DType::kBF16, BFloat16);

}  // namespace
}  // namespace tfm
