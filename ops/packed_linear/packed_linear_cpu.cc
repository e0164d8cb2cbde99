// CPU f32 kernels of pack_linear_weight and packed_linear, compiled once per
// instruction set (ops/cpu_math/isa.h): the panel width and the row block
// are the register file's (see the top of packed_linear.h).
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/register_product.h"
#include "ops/cpu_math/vec.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/packed_linear/packed_linear.h"

TFM_ISA_BEGIN
namespace {

using simd::kLanes;

// A panel is two vectors wide; a block of kRows rows keeps kRows x 2
// accumulators, 2 weight vectors and a broadcast in registers (27 of
// AVX-512's 32, 15 of AVX2's 16): the FMAs outnumber the loads 24 : 14 and
// 12 : 8, and 24 or 12 independent chains cover the FMA latency.
constexpr int64_t kWidth = 2 * kLanes;
#if defined(TFM_KERNEL_ISA_AVX512)
constexpr int kRows = 12;
#else
constexpr int kRows = 6;
#endif

// Rows [0, R) of y (leading dimension `out`) in one panel, the bias
// (kBias) and the ReLU (kRelu) applied to the sums in registers (not in a
// second pass that reads back what was just stored): a whole panel
// straight into y, the last partial one through a block on the stack.
template <int R, bool kBias, bool kRelu>
void RowBlock(const float* x, int64_t in, const float* packed, const float* bias, int64_t out,
              int64_t panel, float* y) {
  const int64_t column = panel * kWidth;
  const int64_t columns = std::min(kWidth, out - column);
  const float* b = packed + panel * in * kWidth;
  alignas(64) float partial[R * kWidth];
  const bool whole = columns == kWidth;
  float* c = whole ? y + column : partial;
  const int64_t ldc = whole ? out : kWidth;
  simd::VecF bias_vecs[2] = {simd::Zero(), simd::Zero()};
  if constexpr (kBias) {
    for (int v = 0; v < 2; ++v) {
      const int64_t first = column + v * kLanes;
      bias_vecs[v] = simd::LoadFirst(bias + first, std::clamp<int64_t>(out - first, 0, kLanes));
    }
  }
  // The sum plus the bias, then max(0, .): the bits of doing them in turn.
  const auto finish = [bias_vecs](simd::VecF sum, int v) {
    if constexpr (kBias) sum = sum + bias_vecs[v];
    if constexpr (kRelu) sum = simd::Max(sum, simd::Zero());
    return sum;
  };
  register_product::MicroKernel<R, 2, false>(in, x, in, 1, b, kWidth, c, ldc, finish);
  if (whole) return;
  for (int r = 0; r < R; ++r) {
    std::memcpy(y + r * out + column, c + r * ldc, columns * sizeof(float));
  }
}

// Rows [first, last) of y in one panel: blocks of kRows, then one of the
// rows left.
template <bool kBias, bool kRelu>
void PanelRows(const float* x, int64_t in, const float* packed, const float* bias, int64_t out,
               int64_t panel, int64_t first, int64_t last, float* y) {
  int64_t r = first;
  for (; r + kRows <= last; r += kRows) {
    RowBlock<kRows, kBias, kRelu>(x + r * in, in, packed, bias, out, panel, y + r * out);
  }
  if (r == last) return;
  register_product::WithRowCount<kRows - 1>(static_cast<int>(last - r), [&](auto rest) {
    RowBlock<decltype(rest)::value, kBias, kRelu>(x + r * in, in, packed, bias, out, panel,
                                                  y + r * out);
  });
}

}  // namespace

absl::Status PackLinearWeightCpu(KernelContext& context) {
  const Tensor& weight = context.input(0);
  const int64_t out = weight.dim(0), in = weight.dim(1);
  const int64_t panels = (out + kWidth - 1) / kWidth;
  TFM_ASSIGN_OR_RETURN(Tensor * packed,
                       context.AllocateOutput(0, {panels, in, kWidth}, DType::kF32));
  const float* w = weight.data<float>();
  float* p = packed->data<float>();
  context.thread_pool()->ParallelFor(panels, 1, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      float* dst = p + panel * in * kWidth;
      for (int64_t j = 0; j < kWidth; ++j) {
        const int64_t row = panel * kWidth + j;
        for (int64_t k = 0; k < in; ++k) dst[k * kWidth + j] = row < out ? w[row * in + k] : 0.0f;
      }
    }
  });
  return absl::OkStatus();
}

absl::Status PackedLinearCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  if (packed.dim(2) != kWidth) {
    return context.Error(absl::StrCat("packed for panels of ", packed.dim(2),
                                      " columns; this CPU's kernels use ", kWidth,
                                      " (pack_linear_weight in this process)"));
  }
  TFM_ASSIGN_OR_RETURN(const int64_t out, context.attrs().Get<int64_t>("out_features"));
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  const int64_t in = packed.dim(1), panels = packed.dim(0), rows = NumRows(x.shape());
  Shape shape = x.shape();
  shape.back() = out;
  TFM_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, shape, DType::kF32));
  if (rows == 0) return absl::OkStatus();
  const float* a = x.data<float>();
  const float* b = packed.data<float>();
  const float* bias = context.num_inputs() == 3 ? context.input(2).data<float>() : nullptr;
  float* c = y->data<float>();
  // Work items are (group of rows, panel) pairs; a thread takes a run of
  // them. Panel inside, row blocks innermost: a panel (in x width floats,
  // 32 KiB at in = 256 with AVX-512) stays in cache while every row block of
  // the group reads it, and the group's rows of x (at most about
  // kGroupBytes) stay in L2 while the panels pass over them.
  //
  // The groups are of equal size (in whole row blocks): groups cut at the
  // most rows that fit left a last group of a few rows, and since a thread
  // takes a run of items, one thread got almost all the rows (768 rows of
  // 512 inputs were 252 + 252 against 252 + 12; 128 rows of 2,048 were
  // 60 + 60 against 8).
  //
  // Which runs: with many groups, group-major, so a thread keeps its groups
  // of x in L2 and reads the weight once per group. With one or two groups
  // (x within about 1 MiB, in L2 beside a panel), panel-major: a thread
  // takes its share of the panels over every row, so each thread reads only
  // its part of the weight once (a decoding step's 128 rows of 2,048
  // inputs, the second feed-forward product at batch 32).
  //
  // Whatever the split, a row's result is one fixed FMA sequence (rows
  // never share accumulators): the same bits whatever the batch.
  constexpr int64_t kGroupBytes = 512 * 1024;
  const int64_t most_group_rows =
      std::max<int64_t>(kRows, kGroupBytes / (in * static_cast<int64_t>(sizeof(float))));
  const int64_t fewest_groups = (rows + most_group_rows - 1) / most_group_rows;
  const int64_t group_rows =
      ((rows + fewest_groups - 1) / fewest_groups + kRows - 1) / kRows * kRows;
  const int64_t groups = (rows + group_rows - 1) / group_rows;  // Rounding may spare one.
  const bool panel_major = groups <= 2;
  const int64_t item_work = std::min(rows, group_rows) * in * kWidth;
  const int64_t grain = std::max<int64_t>(1, kGemmSplitWork / std::max<int64_t>(1, item_work));
  const auto rows_of_panel = bias != nullptr
                                 ? (relu ? PanelRows<true, true> : PanelRows<true, false>)
                                 : (relu ? PanelRows<false, true> : PanelRows<false, false>);
  context.thread_pool()->ParallelFor(groups * panels, grain, [&](int64_t first, int64_t last) {
    for (int64_t item = first; item < last; ++item) {
      const int64_t panel = panel_major ? item / groups : item % panels;
      const int64_t begin = (panel_major ? item % groups : item / panels) * group_rows;
      rows_of_panel(a, in, b, bias, out, panel, begin, std::min(rows, begin + group_rows), c);
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("pack_linear_weight", DType::kF32, PackLinearWeightCpu);
TFM_REGISTER_ISA_KERNEL("packed_linear", DType::kF32, PackedLinearCpu);
TFM_REGISTER_ISA_KERNEL("packed_linear_no_bias", DType::kF32, PackedLinearCpu);
