// CPU kernel of row_top_k: rows spread over the threads, each row scanned
// once into a sorted array of its best `count` (count is small: a beam's
// 2 * beam + 1), so most entries cost one compare against the worst kept.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

namespace tfm {
namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();

// Row `x` of n entries into values/columns [count], best first.
void TopOfRow(const float* x, int64_t n, int64_t count, int64_t forbidden, float* values,
              int32_t* columns) {
  int64_t kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    values[i] = kNone;
    columns[i] = -1;
  }
  for (int64_t column = 0; column < n; ++column) {
    const float v = x[column];
    // NaN and -infinity fail the first test. Columns come in ascending
    // order, so an equal value loses to the one already kept.
    if (!(v > kNone) || (kept == count && !(v > values[count - 1])) || column == forbidden) {
      continue;
    }
    int64_t slot = kept < count ? kept++ : count - 1;
    for (; slot > 0 && v > values[slot - 1]; --slot) {
      values[slot] = values[slot - 1];
      columns[slot] = columns[slot - 1];
    }
    values[slot] = v;
    columns[slot] = static_cast<int32_t>(column);
  }
}

absl::Status RowTopKCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const RowTopKArgs args, RowTopKArgsOf(context));
  const int64_t n = x.dim(1);
  const float* in = x.data<float>();
  const int64_t count = args.count;
  float* out_values = args.values->data<float>();
  int32_t* out_columns = args.columns->data<int32_t>();
  context.thread_pool()->ParallelFor(x.dim(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      TopOfRow(in + row * n, n, count, args.forbidden, out_values + row * count,
               out_columns + row * count);
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("row_top_k", DeviceType::kCPU, DType::kF32, RowTopKCpu);

}  // namespace
}  // namespace tfm
