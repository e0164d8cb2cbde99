// Registers dropout's CUDA kernels (linked only in builds with CUDA): f32,
// f16 and bf16, with the CPU kernel's masks bit for bit.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "ops/dropout/dropout_cuda.h"
#include "ops/dropout/dropout_kernel_args.h"

namespace tfm {
namespace {

absl::Status LaunchStatus(const KernelContext& context, const char* error) {
  if (error == nullptr) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
}

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
  return LaunchStatus(context, LaunchDropout<T>(x.data<T>(), out->data<T>(), mask, x.num_elements(),
                                                scaling.threshold, scaling.scale, state.seed,
                                                state.stream, state.offset, context.stream()));
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
  return LaunchStatus(context, LaunchDropoutBackwardMasked<T>(
                                   dout.data<T>(), mask, dx->data<T>(), dout.num_elements(),
                                   scaling.p == 0.0 ? 1.0f : scaling.scale, context.stream()));
}

#define TFM_REGISTER_DROPOUT_CUDA(dtype, T)                                           \
  TFM_REGISTER_KERNEL("dropout", DeviceType::kCUDA, dtype, DropoutCuda<T>);           \
  TFM_REGISTER_KERNEL("dropout_backward", DeviceType::kCUDA, dtype, DropoutCuda<T>);  \
  TFM_REGISTER_KERNEL("dropout_with_mask", DeviceType::kCUDA, dtype, DropoutCuda<T>); \
  TFM_REGISTER_KERNEL("dropout_backward_masked", DeviceType::kCUDA, dtype,            \
                      DropoutBackwardMaskedCuda<T>)
TFM_REGISTER_DROPOUT_CUDA(DType::kF32, float);
TFM_REGISTER_DROPOUT_CUDA(DType::kF16, Half);
TFM_REGISTER_DROPOUT_CUDA(DType::kBF16, BFloat16);

}  // namespace
}  // namespace tfm
