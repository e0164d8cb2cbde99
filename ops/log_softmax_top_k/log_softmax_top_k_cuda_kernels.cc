// Registers log_softmax_top_k's CUDA kernel (linked only in builds with
// CUDA): row_top_k's kernel ranking log-probabilities it computes on the fly
// (ops/row_top_k/row_top_k_cuda.cu), so a decoding step's distribution is
// neither written nor read again.
#include "core/op_registry.h"
#include "ops/row_top_k/row_top_k_cuda.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {
namespace {

absl::Status LogSoftmaxTopKCuda(KernelContext& context) {
  return RunRowTopKCuda(context, LaunchLogSoftmaxTopK);
}

TFM_REGISTER_KERNEL("log_softmax_top_k", DeviceType::kCUDA, DType::kF32, LogSoftmaxTopKCuda);
TFM_REGISTER_KERNEL("log_softmax_top_k_allowed", DeviceType::kCUDA, DType::kF32,
                    LogSoftmaxTopKCuda);

}  // namespace
}  // namespace tfm
