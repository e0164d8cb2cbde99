// CPU kernels of pack_bf16_linear_weight and bf16_linear, compiled once per
// instruction set (ops/cpu_math/isa.h). The product runs on AMX tiles where
// GemmBf16 does (ops/matmul/gemm_bf16_amx.cc), with vdpbf16ps where the CPU
// has AVX512-BF16 (bf16_pairs_avx512_bf16.cc); elsewhere it widens the
// packed pairs to f32 and sums with vector FMAs (here).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/bf16_linear/bf16_linear.h"
#include "ops/bf16_linear/bf16_pairs_avx512_bf16.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/register_product.h"
#include "ops/cpu_math/vec.h"
#include "ops/matmul/gemm_bf16_cpu.h"
#include "ops/matmul/gemm_cpu.h"

TFM_ISA_BEGIN
namespace {

using simd::kLanes;

constexpr int64_t kPanel = kBf16WeightPanel;        // Columns of a panel.
constexpr int64_t kPanelVectors = kPanel / kLanes;  // 1 with AVX-512, 2 with AVX2.
// Rows a block keeps in registers: kRows x kPanelVectors accumulators (8
// or 16) hide the FMA latency; 2 widened weight vectors and a broadcast
// each besides.
constexpr int kRows = 8;

// Rows [0, R) of y (leading dimension `out`), columns of panel `panel`:
// x (rounded to bf16, as floats, `kp` a row, zeros past `in`) times the
// panel's pairs; then the bias and the ReLU.
template <int R>
void PairsRowBlock(const float* x, int64_t kp, const uint16_t* panel_pairs, const float* bias,
                   bool relu, int64_t out, int64_t panel, float* y) {
  simd::VecF acc[R][kPanelVectors];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < kPanelVectors; ++v) acc[r][v] = simd::Zero();
  }
  const simd::VecI high_half = simd::SetI(0xFFFF0000u);
  for (int64_t pair = 0; pair < kp / 2; ++pair) {
    // A row of the panel: 16 columns, each (input 2 pair, input 2 pair + 1)
    // in one 32-bit unit, low half first. A bf16 is the high half of its
    // f32.
    const uint32_t* units = reinterpret_cast<const uint32_t*>(panel_pairs + pair * 2 * kPanel);
    simd::VecF even[kPanelVectors], odd[kPanelVectors];
#pragma GCC unroll 16
    for (int v = 0; v < kPanelVectors; ++v) {
      const simd::VecI u = simd::LoadI(units + v * kLanes);
      even[v] = simd::BitCastToF(simd::ShiftLeft<16>(u));
      odd[v] = simd::BitCastToF(u & high_half);
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const simd::VecF x0 = simd::Set(x[r * kp + 2 * pair]);
      const simd::VecF x1 = simd::Set(x[r * kp + 2 * pair + 1]);
#pragma GCC unroll 16
      for (int v = 0; v < kPanelVectors; ++v) {
        acc[r][v] = simd::MulAdd(x0, even[v], acc[r][v]);
        acc[r][v] = simd::MulAdd(x1, odd[v], acc[r][v]);
      }
    }
  }
  const int64_t column = panel * kPanel;
  const int64_t columns = std::min(kPanel, out - column);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (int v = 0; v < kPanelVectors; ++v) {
      const int64_t first = v * kLanes;
      if (first >= columns) break;
      const int64_t count = std::min<int64_t>(kLanes, columns - first);
      simd::VecF value = acc[r][v];
      if (bias != nullptr) value = value + simd::LoadFirst(bias + column + first, count);
      // x <= 0 (not NaN) to +0, as GemmEpilogue's ReLU.
      if (relu) value = simd::IfThenElseZero(simd::NotLe(value, simd::Zero()), value);
      simd::StoreFirst(value, y + r * out + column + first, count);
    }
  }
}

}  // namespace

absl::Status PackBf16LinearWeightCpu(KernelContext& context) {
  const Tensor& weight = context.input(0);
  const int64_t out = weight.dim(0), in = weight.dim(1);
  const int64_t np = Bf16PackedWeightRows(out), kp = Bf16PackedWeightInputs(in);
  TFM_ASSIGN_OR_RETURN(Tensor * packed,
                       context.AllocateOutput(0, {np / kPanel, kp / 2, 2 * kPanel}, DType::kBF16));
  const float* w = weight.data<float>();
  BFloat16* p = packed->data<BFloat16>();
  // Once per search: plain scalar rounding (to nearest, ties to even), the
  // same on every CPU.
  context.thread_pool()->ParallelFor(np / kPanel, 1, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      BFloat16* dst = p + panel * kp * kPanel;
      for (int64_t c = 0; c < kPanel; ++c) {
        const int64_t row = panel * kPanel + c;
        for (int64_t j = 0; j < kp; ++j) {
          const float value = row < out && j < in ? w[row * in + j] : 0.0f;
          dst[(j / 2) * 2 * kPanel + 2 * c + j % 2] = BFloat16(value);
        }
      }
    }
  });
  return absl::OkStatus();
}

absl::Status Bf16LinearCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  TFM_ASSIGN_OR_RETURN(const int64_t out, context.attrs().Get<int64_t>("out_features"));
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  const int64_t in = x.dim(-1), rows = NumRows(x.shape());
  Shape shape = x.shape();
  shape.back() = out;
  TFM_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, shape, DType::kF32));
  if (rows == 0) return absl::OkStatus();
  const float* a = x.data<float>();
  const uint16_t* b = reinterpret_cast<const uint16_t*>(packed.data<BFloat16>());
  const float* bias = context.num_inputs() == 3 ? context.input(2).data<float>() : nullptr;
  float* c = y->data<float>();
  TFM_ASSIGN_OR_RETURN(const int64_t kernel_attr, context.attrs().GetOr<int64_t>("kernel", -1));
  const Bf16LinearKernel kernel = kernel_attr == -1 ? ActiveBf16LinearKernel()
                                                    : static_cast<Bf16LinearKernel>(kernel_attr);
  ThreadPool* pool = context.thread_pool();
  const int64_t kp = 2 * packed.dim(1);
  if (kernel == Bf16LinearKernel::kAmxBf16) {
    GemmBf16AmxPackedWeight(a, rows, b, out, in, c, pool, GemmEpilogue{bias, relu});
    return absl::OkStatus();
  }
  if (kernel == Bf16LinearKernel::kAvx512Bf16) {
    Bf16PairsProductAvx512Bf16(a, rows, in, b, kp, out, bias, relu, c, pool);
    return absl::OkStatus();
  }
  // x rounded once, padded to kp with zeros (the pairs past `in` are zero
  // in the weight too).
  std::vector<float> rounded(rows * kp, 0.0f);
  pool->ParallelFor(rows, std::max<int64_t>(1, 16384 / kp), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      for (int64_t j = 0; j < in; ++j) {
        rounded[r * kp + j] = static_cast<float>(BFloat16(a[r * in + j]));
      }
    }
  });
  // Threads take whole panels, each with every row (as packed_linear): a
  // row's sums are the same sequence whatever the batch.
  const int64_t panels = (out + kPanel - 1) / kPanel;
  const int64_t grain =
      std::max<int64_t>(1, kGemmSplitWork / std::max<int64_t>(1, rows * kp * kPanel));
  pool->ParallelFor(panels, grain, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      const uint16_t* panel_pairs = b + panel * kp * kPanel;
      int64_t r = 0;
      for (; r + kRows <= rows; r += kRows) {
        PairsRowBlock<kRows>(rounded.data() + r * kp, kp, panel_pairs, bias, relu, out, panel,
                             c + r * out);
      }
      if (r == rows) continue;
      register_product::WithRowCount<kRows - 1>(static_cast<int>(rows - r), [&](auto rest) {
        PairsRowBlock<decltype(rest)::value>(rounded.data() + r * kp, kp, panel_pairs, bias, relu,
                                             out, panel, c + r * out);
      });
    }
  });
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("pack_bf16_linear_weight", DType::kF32, PackBf16LinearWeightCpu);
TFM_REGISTER_ISA_KERNEL("bf16_linear", DType::kF32, Bf16LinearCpu);
TFM_REGISTER_ISA_KERNEL("bf16_linear_no_bias", DType::kF32, Bf16LinearCpu);
