// Registers multi_tensor_scale_by's and loss_scale_step's CUDA kernels
// (linked only in builds with CUDA).
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/loss_scale/loss_scale_cuda.h"

namespace tfm {
namespace {

absl::Status MultiTensorScaleByCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(bool reciprocal, context.attrs().Get<bool>("reciprocal"));
  const OpCallLayout& layout = context.layout();
  std::vector<ScaleByCudaTensor> tensors;
  tensors.reserve(context.list_size());
  for (int entry = 0; entry < context.list_size(); ++entry) {
    tensors.push_back(ScaleByCudaTensor{
        context.in_place_input(layout.input(0, entry)).data<float>(),
        context.input(layout.input(0, entry)).num_elements(), 0});
  }
  TFM_ASSIGN_OR_RETURN(Tensor list,
                       DeviceListBuffer<ScaleByCudaTensor>(context, tensors.size()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchScaleBy(tensors.data(), static_cast<int>(tensors.size()),
                             ListEntries<ScaleByCudaTensor>(list),
                             context.input(layout.input(1)).data<float>(), reciprocal,
                             context.stream())));
  for (int entry = 0; entry < context.list_size(); ++entry) {
    context.SetOutput(layout.output(0, entry), context.input(layout.input(0, entry)));
  }
  return absl::OkStatus();
}

absl::Status LossScaleStepCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t window, context.attrs().Get<int64_t>("window"));
  TFM_ASSIGN_OR_RETURN(double max_scale, context.attrs().Get<double>("max_scale"));
  TFM_ASSIGN_OR_RETURN(Tensor * next_scale, context.AllocateOutput(0, {}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * next_clean, context.AllocateOutput(1, {}, DType::kF32));
  return CudaLaunchStatus(
      context, LaunchLossScaleStep(context.input(0).data<float>(), context.input(1).data<float>(),
                                   context.input(2).data<float>(), window,
                                   static_cast<float>(max_scale), next_scale->data<float>(),
                                   next_clean->data<float>(), context.stream()));
}

TFM_REGISTER_KERNEL("multi_tensor_scale_by", DeviceType::kCUDA, DType::kF32,
                    MultiTensorScaleByCuda);
TFM_REGISTER_KERNEL("loss_scale_step", DeviceType::kCUDA, DType::kF32, LossScaleStepCuda);

}  // namespace
}  // namespace tfm
