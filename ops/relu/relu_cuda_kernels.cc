// Registers relu's CUDA kernels (linked only in builds with CUDA): f32, f16
// and bf16.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/relu/relu_cuda.h"

namespace tfm {
namespace {

template <typename T>
absl::Status ReluCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  return CudaLaunchStatus(
      context, LaunchRelu<T>(x.data<T>(), out->data<T>(), x.num_elements(), context.stream()));
}

template <typename T>
absl::Status ReluBackwardCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), dout.dtype()));
  TFM_ASSIGN_OR_RETURN(const double scale, context.attrs().GetOr<double>("scale", 1.0));
  return CudaLaunchStatus(
      context, LaunchReluBackward<T>(dout.data<T>(), context.input(1).data<T>(), dx->data<T>(),
                                     dout.num_elements(), static_cast<float>(scale),
                                     context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("relu", DeviceType::kCUDA, ReluCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("relu_backward", DeviceType::kCUDA, ReluBackwardCuda, float, Half,
                           BFloat16);

}  // namespace
}  // namespace tfm
