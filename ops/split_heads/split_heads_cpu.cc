// CPU kernels of split_heads and merge_heads: one strided row copy serves
// both directions and every dtype (only bytes move).
#include <algorithm>
#include <cstring>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/split_heads/split_heads.h"

namespace tfm {

// One d-sized row at a time.
void PermuteHeadsOnHost(const PermuteHeadsTensor& tensor, bool split) {
  const char* from = static_cast<const char*>(tensor.from);
  char* to = static_cast<char*>(tensor.to);
  const int64_t len = tensor.len, heads = tensor.heads, row_bytes = tensor.row_bytes;
  const int64_t slots = tensor.slots > 0 ? tensor.slots : heads;
  ThreadPool::Default()->ParallelFor(
      tensor.batch * len,
      std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, row_bytes * heads)),
      [&](int64_t begin, int64_t end) {
        for (int64_t bt = begin; bt < end; ++bt) {
          const int64_t b = bt / len;
          const int64_t t = bt % len;
          for (int64_t h = 0; h < heads; ++h) {
            const int64_t merged = bt * slots + h;               // [b, t, h] row.
            const int64_t headwise = (b * heads + h) * len + t;  // [b, h, t] row.
            const int64_t src = split ? merged : headwise;
            const int64_t dst = split ? headwise : merged;
            std::memcpy(to + dst * row_bytes, from + src * row_bytes, row_bytes);
          }
        }
      });
}

namespace {

// Each list entry in turn: [batch, len, heads * d] split, or
// [batch, heads, len, d] merged.
absl::Status PermuteHeadsCpu(KernelContext& context, bool split) {
  int64_t heads = 0;
  if (split) {
    TFM_ASSIGN_OR_RETURN(heads, context.attrs().Get<int64_t>("heads"));
  }
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    const int64_t batch = x.dim(0);
    const int64_t len = split ? x.dim(1) : x.dim(2);
    const int64_t entry_heads = split ? heads : x.dim(1);
    const int64_t d = split ? x.dim(2) / heads : x.dim(3);
    TFM_ASSIGN_OR_RETURN(Tensor * out,
                         context.AllocateOutput(context.layout().output(0, entry), x.dtype()));
    PermuteHeadsOnHost({x.raw_data(), out->raw_data(), batch, len, entry_heads,
                        d * static_cast<int64_t>(DTypeSize(x.dtype()))},
                       split);
  }
  return absl::OkStatus();
}

absl::Status SplitHeadsCpu(KernelContext& context) { return PermuteHeadsCpu(context, true); }

absl::Status MergeHeadsCpu(KernelContext& context) { return PermuteHeadsCpu(context, false); }

// Every dtype: only bytes move.
TFM_REGISTER_KERNELS("split_heads", DeviceType::kCPU, SplitHeadsCpu, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);
TFM_REGISTER_KERNELS("merge_heads", DeviceType::kCPU, MergeHeadsCpu, DType::kF32, DType::kF16,
                     DType::kBF16, DType::kI32, DType::kI64);

}  // namespace
}  // namespace tfm
