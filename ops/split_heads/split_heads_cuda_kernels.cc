// Registers the split_heads and merge_heads CUDA kernels (linked only in
// builds with CUDA): every dtype the CPU has, as only bytes move.
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/split_heads/split_heads_cuda.h"

namespace tfm {
namespace {

// Every list entry in one launch (up to kMaxPermuteEntries of them).
absl::Status PermuteHeadsCuda(KernelContext& context, bool split) {
  int64_t heads = 0;
  if (split) {
    TFM_ASSIGN_OR_RETURN(heads, context.attrs().Get<int64_t>("heads"));
  }
  std::vector<PermuteHeadsTensor> tensors;
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    const int64_t len = split ? x.dim(1) : x.dim(2);
    const int64_t entry_heads = split ? heads : x.dim(1);
    const int64_t d = split ? x.dim(2) / heads : x.dim(3);
    TFM_ASSIGN_OR_RETURN(Tensor * out,
                         context.AllocateOutput(context.layout().output(0, entry), x.dtype()));
    tensors.push_back(PermuteHeadsTensor{x.raw_data(), out->raw_data(), x.dim(0), len,
                                         entry_heads,
                                         d * static_cast<int64_t>(DTypeSize(x.dtype()))});
  }
  return CudaLaunchStatus(context, LaunchPermuteHeads(tensors.data(),
                                                      static_cast<int>(tensors.size()), split,
                                                      context.stream()));
}

absl::Status SplitHeadsCuda(KernelContext& context) { return PermuteHeadsCuda(context, true); }

absl::Status MergeHeadsCuda(KernelContext& context) { return PermuteHeadsCuda(context, false); }

// Every dtype: only bytes move.
TFM_REGISTER_KERNELS("split_heads", DeviceType::kCUDA, SplitHeadsCuda, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);
TFM_REGISTER_KERNELS("merge_heads", DeviceType::kCUDA, MergeHeadsCuda, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);

}  // namespace
}  // namespace tfm
