// CPU kernel of log_softmax_top_k. Per row, as LogSoftmaxCpu computes it
// (ops/softmax/softmax_cpu.cc): the max (NaN if any), the log of the sum of
// exponentials, then each log-probability (x - max) - log_sum, one vector at
// a time, compared with the worst value kept; only the rare vector with a
// better lane goes through the scalar insertion of row_top_k's kernel
// (RowTopKeeper, ops/row_top_k/row_top_k_kernel_args.h), lane by lane in
// column order. Lanes the row's filter excludes are dropped from a vector's
// comparison at once (a constrained step may allow a handful of tokens, and
// the bar would otherwise stay at -infinity). Nothing of size n is written.
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

void TopOfRow(const float* x, int64_t n, RowTopKeeper& kept, const ColumnFilter& filter,
              const float* next_row) {
  using namespace simd;  // NOLINT: the vector vocabulary of this ISA.
  const float max = MaxOrNaN(x, n);
  if (max == kNone) return;  // log_softmax: every entry -infinity.
  // The next row is fetched while this one's exponentials are summed: a
  // batch's logits outgrow a core's L2 (and int8's output projection writes
  // them with non-temporal stores), so a row's max pass would otherwise
  // wait on memory.
  const float log_sum =
      std::isfinite(max) ? std::log(SumExpShifted(x, n, max, next_row)) : 0.0f;
  const VecF vmax = Set(max), vlog_sum = Set(log_sum);
  VecF bar = Set(kept.Bar());
  alignas(64) float lanes[kLanes];
  // The lanes of one vector of log-probabilities that beat the bar, in
  // column order (the bar rises as they enter).
  const auto offer = [&](VecF y, int64_t first, uint32_t better) {
    Store(y, lanes);
    for (; better != 0; better &= better - 1) {
      const int lane = __builtin_ctz(better);
      kept.Offer(lanes[lane], first + lane, filter);
    }
    bar = Set(kept.Bar());
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const VecF y = (Load(x + i) - vmax) - vlog_sum;
    const uint32_t better = Bits(Gt(y, bar)) & filter.LaneBits(i, kLanes);
    if (better != 0) offer(y, i, better);
  }
  if (i < n) {
    const VecF y = (LoadFirst(x + i, n - i) - vmax) - vlog_sum;
    const uint32_t better =
        Bits(Gt(y, bar)) & filter.LaneBits(i, kLanes) & ((uint32_t{1} << (n - i)) - 1);
    if (better != 0) offer(y, i, better);
  }
}

}  // namespace

absl::Status LogSoftmaxTopKCpu(KernelContext& context) {
  return RunRowTopKCpu(context, TopOfRow);
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("log_softmax_top_k", DType::kF32, LogSoftmaxTopKCpu);
TFM_REGISTER_ISA_KERNEL("log_softmax_top_k_allowed", DType::kF32, LogSoftmaxTopKCpu);
