// Registers log_softmax_top_k's CUDA kernel (linked only in builds with
// CUDA): row_top_k's kernel ranking log-probabilities it computes on the fly
// (ops/row_top_k/row_top_k_cuda.cu), so a decoding step's distribution is
// neither written nor read again.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/row_top_k/row_top_k_cuda.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {
namespace {

absl::Status LogSoftmaxTopKCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const RowTopKArgs args, RowTopKArgsOf(context));
  return CudaLaunchStatus(
      context, LaunchLogSoftmaxTopK(x.data<float>(), x.dim(0), x.dim(1),
                                    static_cast<int>(args.count), args.forbidden,
                                    args.values->data<float>(), args.columns->data<int32_t>(),
                                    context.stream()));
}

TFM_REGISTER_KERNEL("log_softmax_top_k", DeviceType::kCUDA, DType::kF32, LogSoftmaxTopKCuda);

}  // namespace
}  // namespace tfm
