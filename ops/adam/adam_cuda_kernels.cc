// Registers adam's CUDA kernel (linked only in builds with CUDA): f32
// parameters and state, updated in place by one multi-tensor launch over a
// list of one.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/adam_cuda.h"
#include "ops/adam/adam_kernel_args.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

absl::Status AdamCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const AdamStep step, ReadAdamStep(context));
  const AdamCudaTensor tensor{
      context.in_place_input(0).data<float>(), context.input(1).data<float>(),
      context.in_place_input(2).data<float>(), context.in_place_input(3).data<float>(),
      context.input(0).num_elements(),         0};
  // The list lives in device memory (from the caching allocator, in 8-byte
  // words) until the kernel on this stream has read it.
  constexpr int64_t kListWords = (sizeof(AdamCudaTensor) + 7) / 8;
  TFM_ASSIGN_OR_RETURN(
      Tensor list, Tensor::Empty({kListWords}, DType::kI64, context.device(), context.stream()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context,
      LaunchAdamFromHost(&tensor, 1, reinterpret_cast<AdamCudaTensor*>(list.data<int64_t>()), step,
                         context.stream())));
  // In place: the outputs are the updated inputs.
  context.SetOutput(0, context.input(0));
  context.SetOutput(1, context.input(2));
  context.SetOutput(2, context.input(3));
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("adam", DeviceType::kCUDA, DType::kF32, AdamCuda);

}  // namespace
}  // namespace tfm
