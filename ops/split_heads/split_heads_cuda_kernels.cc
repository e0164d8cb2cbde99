// Registers the split_heads and merge_heads CUDA kernels (linked only in
// builds with CUDA): every dtype the CPU has, as only bytes move.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

absl::Status SplitHeadsCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  const int64_t batch = x.dim(0), len = x.dim(1), d = x.dim(2) / heads;
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.dtype()));
  return CudaLaunchStatus(
      context, LaunchPermuteHeads(x.raw_data(), out->raw_data(), batch, len, heads,
                                  d * DTypeSize(x.dtype()), /*split=*/true, context.stream()));
}

absl::Status MergeHeadsCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  const int64_t batch = x.dim(0), heads = x.dim(1), len = x.dim(2), d = x.dim(3);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.dtype()));
  return CudaLaunchStatus(
      context, LaunchPermuteHeads(x.raw_data(), out->raw_data(), batch, len, heads,
                                  d * DTypeSize(x.dtype()), /*split=*/false, context.stream()));
}

// Every dtype: only bytes move.
TFM_REGISTER_KERNELS("split_heads", DeviceType::kCUDA, SplitHeadsCuda, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);
TFM_REGISTER_KERNELS("merge_heads", DeviceType::kCUDA, MergeHeadsCuda, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);

}  // namespace
}  // namespace tfm
