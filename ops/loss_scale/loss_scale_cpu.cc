// CPU kernels of multi_tensor_scale_by and loss_scale_step.
#include <algorithm>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/loss_scale/loss_scale_kernel_args.h"

namespace tfm {
namespace {

constexpr int64_t kChunk = 1 << 14;

absl::Status MultiTensorScaleByCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(bool reciprocal, context.attrs().Get<bool>("reciprocal"));
  const OpCallLayout& layout = context.layout();
  const float scale = context.input(layout.input(1)).data<float>()[0];
  const float factor = reciprocal ? 1.0f / scale : scale;
  for (int entry = 0; entry < context.list_size(); ++entry) {
    float* x = context.in_place_input(layout.input(0, entry)).data<float>();
    context.thread_pool()->ParallelFor(
        context.input(layout.input(0, entry)).num_elements(), kChunk,
        [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) x[i] *= factor;
        });
    context.SetOutput(layout.output(0, entry), context.input(layout.input(0, entry)));
  }
  return absl::OkStatus();
}

absl::Status LossScaleStepCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t window, context.attrs().Get<int64_t>("window"));
  TFM_ASSIGN_OR_RETURN(double max_scale, context.attrs().Get<double>("max_scale"));
  float scale = context.input(0).data<float>()[0];
  float clean = context.input(1).data<float>()[0];
  StepLossScale(context.input(2).data<float>()[0], window, static_cast<float>(max_scale), &scale,
                &clean);
  TFM_ASSIGN_OR_RETURN(Tensor * next_scale, context.AllocateOutput(0, {}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * next_clean, context.AllocateOutput(1, {}, DType::kF32));
  next_scale->data<float>()[0] = scale;
  next_clean->data<float>()[0] = clean;
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("multi_tensor_scale_by", DeviceType::kCPU, DType::kF32,
                    MultiTensorScaleByCpu);
TFM_REGISTER_KERNEL("loss_scale_step", DeviceType::kCPU, DType::kF32, LossScaleStepCpu);

}  // namespace
}  // namespace tfm
