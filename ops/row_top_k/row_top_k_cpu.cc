// CPU kernel of row_top_k: rows spread over the threads, each row scanned
// once into a sorted array of its best `count` (count is small: a beam's
// 2 * beam + 1), so most entries cost one compare against the worst kept.
#include <cstdint>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {
namespace {

absl::Status RowTopKCpu(KernelContext& context) {
  return RunRowTopKCpu(
      context, [](const float* x, int64_t n, RowTopKeeper& kept, const ColumnFilter& filter,
                  const float* /*next_row*/) {
        for (int64_t column = 0; column < n; ++column) {
          // Most entries fail here, against the worst kept.
          if (x[column] > kept.Bar()) kept.Offer(x[column], column, filter);
        }
      });
}

TFM_REGISTER_KERNEL("row_top_k", DeviceType::kCPU, DType::kF32, RowTopKCpu);
TFM_REGISTER_KERNEL("row_top_k_allowed", DeviceType::kCPU, DType::kF32, RowTopKCpu);

}  // namespace
}  // namespace tfm
