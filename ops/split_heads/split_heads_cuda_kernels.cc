// Registers the split_heads and merge_heads CUDA kernels (linked only in
// builds with CUDA): every dtype the CPU has, as only bytes move.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

absl::Status LaunchStatus(const KernelContext& context, const char* error) {
  if (error == nullptr) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
}

absl::Status SplitHeadsCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t heads, context.attrs().Get<int64_t>("heads"));
  const int64_t batch = x.dim(0), len = x.dim(1), d = x.dim(2) / heads;
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, {batch, heads, len, d}, x.dtype()));
  return LaunchStatus(
      context, LaunchPermuteHeads(x.raw_data(), out->raw_data(), batch, len, heads,
                                  d * DTypeSize(x.dtype()), /*split=*/true, context.stream()));
}

absl::Status MergeHeadsCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  const int64_t batch = x.dim(0), heads = x.dim(1), len = x.dim(2), d = x.dim(3);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, {batch, len, heads * d}, x.dtype()));
  return LaunchStatus(
      context, LaunchPermuteHeads(x.raw_data(), out->raw_data(), batch, len, heads,
                                  d * DTypeSize(x.dtype()), /*split=*/false, context.stream()));
}

#define TFM_REGISTER_SPLIT_HEADS_CUDA(dtype)                                    \
  TFM_REGISTER_KERNEL("split_heads", DeviceType::kCUDA, dtype, SplitHeadsCuda); \
  TFM_REGISTER_KERNEL("merge_heads", DeviceType::kCUDA, dtype, MergeHeadsCuda)
TFM_REGISTER_SPLIT_HEADS_CUDA(DType::kF32);
TFM_REGISTER_SPLIT_HEADS_CUDA(DType::kF16);
TFM_REGISTER_SPLIT_HEADS_CUDA(DType::kBF16);
TFM_REGISTER_SPLIT_HEADS_CUDA(DType::kI32);
TFM_REGISTER_SPLIT_HEADS_CUDA(DType::kI64);

}  // namespace
}  // namespace tfm
