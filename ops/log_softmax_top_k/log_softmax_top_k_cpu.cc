// CPU kernel of log_softmax_top_k. Per row, as LogSoftmaxCpu computes it
// (ops/softmax/softmax_cpu.cc): the max (NaN if any), the log of the sum of
// exponentials, then each log-probability (x - max) - log_sum, one vector at
// a time, compared with the worst value kept; only the rare vector with a
// better lane goes through the scalar insertion of row_top_k's kernel
// (ops/row_top_k/row_top_k_cpu.cc), lane by lane in column order. Nothing
// of size n is written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cpu_math/vec.h"
#include "ops/row_top_k/row_top_k_kernel_args.h"

TFM_ISA_BEGIN
namespace {

constexpr float kNone = -std::numeric_limits<float>::infinity();

// The best `count` kept so far, best first (value desc, column asc).
struct Kept {
  float* values;
  int32_t* columns;
  int64_t count;
  int64_t size = 0;

  // The value an entry must beat to enter.
  float Bar() const { return size < count ? kNone : values[count - 1]; }

  // row_top_k's insertion: a later column loses a tie.
  void Offer(float v, int64_t column, int64_t forbidden) {
    if (!(v > kNone) || (size == count && !(v > values[count - 1])) || column == forbidden) {
      return;
    }
    int64_t slot = size < count ? size++ : count - 1;
    for (; slot > 0 && v > values[slot - 1]; --slot) {
      values[slot] = values[slot - 1];
      columns[slot] = columns[slot - 1];
    }
    values[slot] = v;
    columns[slot] = static_cast<int32_t>(column);
  }
};

void TopOfRow(const float* x, int64_t n, int64_t count, int64_t forbidden, float* values,
              int32_t* columns) {
  using namespace simd;  // NOLINT: the vector vocabulary of this ISA.
  for (int64_t i = 0; i < count; ++i) {
    values[i] = kNone;
    columns[i] = -1;
  }
  const float max = MaxOrNaN(x, n);
  if (max == kNone) return;  // log_softmax: every entry -infinity.
  const float log_sum = std::isfinite(max) ? std::log(SumExpShifted(x, n, max)) : 0.0f;
  const VecF vmax = Set(max), vlog_sum = Set(log_sum);
  Kept kept{values, columns, count};
  VecF bar = Set(kept.Bar());
  alignas(64) float lanes[kLanes];
  // The lanes of one vector of log-probabilities that beat the bar, in
  // column order (the bar rises as they enter).
  const auto offer = [&](VecF y, int64_t first, uint32_t better) {
    Store(y, lanes);
    for (; better != 0; better &= better - 1) {
      const int lane = __builtin_ctz(better);
      kept.Offer(lanes[lane], first + lane, forbidden);
    }
    bar = Set(kept.Bar());
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const VecF y = (Load(x + i) - vmax) - vlog_sum;
    const Mask better = Gt(y, bar);
    if (AnyTrue(better)) offer(y, i, Bits(better));
  }
  if (i < n) {
    const VecF y = (LoadFirst(x + i, n - i) - vmax) - vlog_sum;
    const uint32_t better = Bits(Gt(y, bar)) & ((uint32_t{1} << (n - i)) - 1);
    if (better != 0) offer(y, i, better);
  }
}

}  // namespace

absl::Status LogSoftmaxTopKCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const RowTopKArgs args, RowTopKArgsOf(context));
  const int64_t n = x.dim(1);
  const float* in = x.data<float>();
  const int64_t count = args.count;
  float* out_values = args.values->data<float>();
  int32_t* out_columns = args.columns->data<int32_t>();
  // Rows per task: enough work to outweigh the scheduling.
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n));
  context.thread_pool()->ParallelFor(x.dim(0), grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      TopOfRow(in + row * n, n, count, args.forbidden, out_values + row * count,
               out_columns + row * count);
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("log_softmax_top_k", DType::kF32, LogSoftmaxTopKCpu);
