// Registers row_top_k's CUDA kernel (linked only in builds with CUDA).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/row_top_k/row_top_k_cuda.h"

namespace tfm {
namespace {

absl::Status RowTopKCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t count, context.attrs().Get<int64_t>("count"));
  TFM_ASSIGN_OR_RETURN(int64_t forbidden, context.attrs().Get<int64_t>("forbidden_column"));
  TFM_ASSIGN_OR_RETURN(Tensor * values, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * columns, context.AllocateOutput(1, DType::kI32));
  return CudaLaunchStatus(
      context, LaunchRowTopK(x.data<float>(), x.dim(0), x.dim(1), static_cast<int>(count),
                             forbidden, values->data<float>(), columns->data<int32_t>(),
                             context.stream()));
}

TFM_REGISTER_KERNEL("row_top_k", DeviceType::kCUDA, DType::kF32, RowTopKCuda);

}  // namespace
}  // namespace tfm
