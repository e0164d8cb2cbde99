// Registers row_top_k's CUDA kernel (linked only in builds with CUDA).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/row_top_k/row_top_k_cuda.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {

absl::Status RunRowTopKCuda(KernelContext& context, RowTopKLauncher launch) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const RowTopKArgs args, RowTopKArgsOf(context));
  return CudaLaunchStatus(
      context, launch(x.data<float>(), x.dim(0), x.dim(1), static_cast<int>(args.count),
                      args.forbidden, args.allowed, args.values->data<float>(),
                      args.columns->data<int32_t>(), context.stream()));
}

namespace {

absl::Status RowTopKCuda(KernelContext& context) { return RunRowTopKCuda(context, LaunchRowTopK); }

TFM_REGISTER_KERNEL("row_top_k", DeviceType::kCUDA, DType::kF32, RowTopKCuda);
TFM_REGISTER_KERNEL("row_top_k_allowed", DeviceType::kCUDA, DType::kF32, RowTopKCuda);

}  // namespace
}  // namespace tfm
