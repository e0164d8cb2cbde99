// Registers the CUDA kernel of adam and multi_tensor_adam (linked only in
// builds with CUDA): f32 parameters and state, updated in place by one
// multi-tensor launch over the call's tensors (a list of one for adam).
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/adam_cuda.h"
#include "ops/adam/adam_kernel_args.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

absl::Status AdamCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const AdamStep step, ReadAdamStep(context));
  TFM_ASSIGN_OR_RETURN(const AdamCall call, ReadAdamCall(context));
  std::vector<AdamCudaTensor> tensors;
  tensors.reserve(call.entries.size());
  for (const AdamEntry& t : call.entries) {
    tensors.push_back(AdamCudaTensor{t.param, t.grad, t.m, t.v, t.count, 0});
  }
  TFM_ASSIGN_OR_RETURN(Tensor list, DeviceListBuffer<AdamCudaTensor>(context, tensors.size()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchAdamFromHost(tensors.data(), static_cast<int>(tensors.size()),
                                  ListEntries<AdamCudaTensor>(list), step,
                                  call.grad_sum_of_squares, call.skip_guard, call.max_norm,
                                  context.stream())));
  HandBackAdamState(context);
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("adam", DeviceType::kCUDA, DType::kF32, AdamCuda);
TFM_REGISTER_KERNEL("multi_tensor_adam", DeviceType::kCUDA, DType::kF32, AdamCuda);

}  // namespace
}  // namespace tfm
