// Registers dropout's CUDA kernels (linked only in builds with CUDA): f32,
// f16 and bf16, with the CPU kernel's masks bit for bit.
#include "core/op_registry.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/dropout/dropout_cuda.h"
#include "ops/dropout/dropout_kernel_args.h"

namespace tfm {
namespace {

// Serves dropout, dropout_backward (the same map) and dropout_with_mask,
// which also writes the keep bits.
template <typename T>
absl::Status DropoutCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const DropoutScaling scaling, ReadDropoutScaling(context));
  TFM_ASSIGN_OR_RETURN(const PhiloxState state, PhiloxStateFromAttrs(context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  uint32_t* mask = nullptr;
  if (context.def().outputs.size() == 2) {
    TFM_ASSIGN_OR_RETURN(
        Tensor * mask_tensor,
        context.AllocateOutput(1, {DropoutMaskWords(x.num_elements())}, DType::kI32));
    mask = reinterpret_cast<uint32_t*>(mask_tensor->data<int32_t>());
  }
  // p = 0 needs no special case: every uniform is >= 0 and the scale is 1.
  return CudaLaunchStatus(
      context,
      LaunchDropout<T>(x.data<T>(), out->data<T>(), mask, x.num_elements(), scaling.threshold,
                       scaling.scale, state.seed, state.stream, state.offset, context.stream()));
}

template <typename T>
absl::Status DropoutBackwardMaskedCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(const DropoutScaling scaling, ReadDropoutScaling(context));
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), dout.dtype()));
  // p = 0 passes dout whatever the mask says, as on the CPU.
  const uint32_t* mask = scaling.p == 0.0
                             ? nullptr
                             : reinterpret_cast<const uint32_t*>(context.input(1).data<int32_t>());
  return CudaLaunchStatus(context, LaunchDropoutBackwardMasked<T>(
                                       dout.data<T>(), mask, dx->data<T>(), dout.num_elements(),
                                       scaling.p == 0.0 ? 1.0f : scaling.scale, context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("dropout", DeviceType::kCUDA, DropoutCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("dropout_backward", DeviceType::kCUDA, DropoutCuda, float, Half,
                           BFloat16);
TFM_REGISTER_TYPED_KERNELS("dropout_with_mask", DeviceType::kCUDA, DropoutCuda, float, Half,
                           BFloat16);
TFM_REGISTER_TYPED_KERNELS("dropout_backward_masked", DeviceType::kCUDA, DropoutBackwardMaskedCuda,
                           float, Half, BFloat16);

}  // namespace
}  // namespace tfm
