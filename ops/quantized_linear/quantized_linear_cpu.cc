// CPU kernels of quantize_linear_weight and quantized_linear: the weight's
// quantization and packing (once per model), the activations' per-row
// quantization (every call), the scalar reference product, and the threads
// over panels that run the chosen product (int8_panels.h).
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cache_aligned_vector.h"
#include "core/cpu_features.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/claimed_runs.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/quantized_linear/int8_panels.h"
#include "ops/quantized_linear/int8_quantize_rows.h"
#include "ops/quantized_linear/quantized_linear.h"

namespace tfm {
namespace {

constexpr int64_t kGroupBytes = kInt8PanelColumns * kInt8GroupInputs;

// The weights' quantization: any copy gives the same bytes
// (int8_quantize_rows.h), so the fastest this CPU runs.
Int8QuantizeWeightRowFn QuantizeWeightRowForHost() {
  const CpuFeatures& f = HostCpuFeatures();
  if (f.avx512) return Int8QuantizeWeightRowAvx512;
  return f.avx2 ? Int8QuantizeWeightRowAvx2 : Int8QuantizeWeightRowScalar;
}

absl::Status QuantizeLinearWeightCpu(KernelContext& context) {
  const Tensor& weight = context.input(0);
  const int64_t out = weight.dim(0), in = weight.dim(1);
  const int64_t panels = (out + kInt8PanelColumns - 1) / kInt8PanelColumns;
  const int64_t groups = (in + kInt8GroupInputs - 1) / kInt8GroupInputs;
  TFM_ASSIGN_OR_RETURN(
      Tensor * packed,
      context.AllocateOutput(0, {panels, groups, kInt8PanelColumns, kInt8GroupInputs}, DType::kI8));
  TFM_ASSIGN_OR_RETURN(Tensor * scales, context.AllocateOutput(1, {out}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * row_sums, context.AllocateOutput(2, {out}, DType::kI32));
  const float* w = weight.data<float>();
  int8_t* p = packed->data<int8_t>();
  float* s = scales->data<float>();
  int32_t* sums = row_sums->data<int32_t>();
  const Int8QuantizeWeightRowFn quantize_row = QuantizeWeightRowForHost();
  context.thread_pool()->ParallelFor(panels, 1, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      for (int64_t j = 0; j < kInt8PanelColumns; ++j) {
        // Each row's 4 weights of a group lie side by side, a group's rows
        // kInt8GroupInputs apart, the groups kGroupBytes apart.
        int8_t* to = p + panel * groups * kGroupBytes + j * kInt8GroupInputs;
        const int64_t row = panel * kInt8PanelColumns + j;
        float scale;
        int32_t sum;
        if (row >= out) {  // The last panel's columns past `out`: zeros.
          quantize_row(w, /*in=*/0, groups, kGroupBytes, to, &scale, &sum);
          continue;
        }
        quantize_row(w + row * in, in, groups, kGroupBytes, to, &s[row], &sums[row]);
      }
    }
  });
  return absl::OkStatus();
}

// x [rows, in] -> levels in [0, levels] with zp, sx per row
// (int8_quantize_rows.h), with `quantize_row`: row r's group g at
// u + r * row_step + g * group_stride (int8_panels.h's layouts). Rows are
// independent; a thread takes at least kQuantizeSplitInputs inputs' worth,
// so that a decoding step's 128 rows of 256 split over two threads. They
// measured about 0.5 ns an input there (the rows come from the op before,
// part of them from the other core's cache): a share takes several
// microseconds, against about one for a hand-off to a spinning worker.
constexpr int64_t kQuantizeSplitInputs = 16384;

void QuantizeRows(Int8QuantizeRowFn quantize_row, const float* x, int64_t rows, int64_t in,
                  int64_t groups, int64_t row_step, int64_t group_stride, int levels,
                  ThreadPool* pool, uint8_t* u, int32_t* zero_points, float* x_scales) {
  pool->ParallelFor(rows, std::max<int64_t>(1, kQuantizeSplitInputs / std::max<int64_t>(1, in)),
                    [&](int64_t first, int64_t last) {
                      for (int64_t r = first; r < last; ++r) {
                        quantize_row(x + r * in, in, groups, group_stride, levels, u + r * row_step,
                                     zero_points + r, x_scales + r);
                      }
                    });
}

// The activations' quantization that goes with `kernel`: the vector one of
// its instruction set (the same bytes as the scalar one).
Int8QuantizeRowFn QuantizeRowFor(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kScalar:
      return Int8QuantizeRowScalar;
    case Int8Kernel::kAvx2:
    case Int8Kernel::kAvxVnni:
      return Int8QuantizeRowAvx2;
    case Int8Kernel::kAvx512Vnni:
    case Int8Kernel::kAmxInt8:
      return Int8QuantizeRowAvx512;
  }
  return Int8QuantizeRowScalar;
}

Int8PanelsFn PanelsFor(Int8Kernel kernel) {
  switch (kernel) {
    case Int8Kernel::kScalar:
      return Int8PanelsScalar;
    case Int8Kernel::kAvx2:
      return Int8PanelsAvx2;
    case Int8Kernel::kAvxVnni:
      return Int8PanelsAvxVnni;
    case Int8Kernel::kAvx512Vnni:
      return Int8PanelsAvx512Vnni;
    case Int8Kernel::kAmxInt8:
      return Int8AmxPanels();
  }
  return Int8PanelsScalar;
}

// One call's quantized activations, their zero points and scales: kept by
// the calling thread from call to call (a decoding step's products at a few
// rows would otherwise spend a visible share of their time on three
// allocations each). They are the calling thread's alone: the pool's
// threads write disjoint rows of them within its call, and no call runs
// inside another on one thread. The levels start on a cache line: the
// tiles read their rows in whole lines (core/cache_aligned_vector.h).
struct ActivationScratch {
  CacheAlignedVector<uint8_t> levels;
  std::vector<int32_t> zero_points;
  std::vector<float> scales;
};

ActivationScratch& ThisThreadsScratch() {
  thread_local ActivationScratch scratch;
  return scratch;
}

absl::Status QuantizedLinearCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& packed = context.input(1);
  const Tensor& scales = context.input(2);
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  TFM_ASSIGN_OR_RETURN(const std::string name,
                       context.attrs().GetOr<std::string>("kernel", std::string()));
  Int8Kernel kernel = ActiveInt8Kernel();
  if (!name.empty()) {
    TFM_ASSIGN_OR_RETURN(kernel, ParseInt8Kernel(name));
  }
  const int64_t in = x.dim(-1), out = scales.dim(0), rows = NumRows(x.shape());
  const int64_t groups = packed.dim(1), panels = packed.dim(0);
  Shape shape = x.shape();
  shape.back() = out;
  TFM_ASSIGN_OR_RETURN(Tensor * y, context.AllocateOutput(0, shape, DType::kF32));
  if (rows == 0) return absl::OkStatus();
  const int64_t stride = groups * kInt8GroupInputs;
  // AMX takes inputs in whole tile rows (int8_panels.h); other widths go to
  // the AVX-512 VNNI kernel, which reads the same packed weights.
  if (kernel == Int8Kernel::kAmxInt8 && groups % kInt8AmxTileGroups != 0) {
    kernel = Int8Kernel::kAvx512Vnni;
  }
  // AMX reads the activations row-major, rows padded with zeros to whole
  // tiles; the others [groups, rows, 4].
  const bool row_major = kernel == Int8Kernel::kAmxInt8;
  const int64_t padded_rows =
      row_major ? (rows + kInt8AmxTileRows - 1) / kInt8AmxTileRows * kInt8AmxTileRows : rows;
  ActivationScratch& scratch = ThisThreadsScratch();
  scratch.levels.resize(padded_rows * stride);
  scratch.zero_points.resize(rows);
  scratch.scales.resize(rows);
  uint8_t* u_data = scratch.levels.data();
  if (padded_rows > rows) std::fill(u_data + rows * stride, u_data + padded_rows * stride, 0);
  QuantizeRows(QuantizeRowFor(kernel), x.data<float>(), rows, in, groups,
               /*row_step=*/row_major ? stride : kInt8GroupInputs,
               /*group_stride=*/row_major ? kInt8GroupInputs : rows * kInt8GroupInputs,
               Int8ActivationLevels(kernel), context.thread_pool(), u_data,
               scratch.zero_points.data(), scratch.scales.data());
  Int8Product product;
  product.rows = rows;
  product.groups = groups;
  product.out = out;
  product.x = u_data;
  product.x_zero_points = scratch.zero_points.data();
  product.x_scales = scratch.scales.data();
  product.packed = packed.data<int8_t>();
  product.scales = scales.data<float>();
  product.row_sums = context.input(3).data<int32_t>();
  product.bias = context.num_inputs() == 5 ? context.input(4).data<float>() : nullptr;
  product.relu = relu;
  product.y = y->data<float>();
  product.stream_y = static_cast<int64_t>(rows * out * sizeof(float)) > kInt8StreamOutputBytes;
  // Threads take runs of whole panels, each with every row (as
  // packed_linear): a row's result never depends on the batch, the thread
  // count or the runs; the runs are claimed as threads come free
  // (claimed_runs.h), in pairs of panels for AMX. An int8 product does
  // about four times the work of an f32 one per instruction, hence four
  // times packed_linear's work per task.
  const Int8PanelsFn run = PanelsFor(kernel);
  const int64_t panel_work = rows * stride * kInt8PanelColumns;
  const int64_t grain = std::max<int64_t>(2, 4 * kGemmSplitWork / std::max<int64_t>(1, panel_work));
  RunClaimedRuns(
      context.thread_pool(), panels, grain, /*multiple=*/2,
      [&](int64_t first, int64_t last) { run(product, first, last); },
      [&] {
        // Non-temporal stores are weakly ordered: drained before the pool
        // hands this thread's part back.
        if (product.stream_y) _mm_sfence();
      });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("quantize_linear_weight", DeviceType::kCPU, DType::kF32,
                    QuantizeLinearWeightCpu);
TFM_REGISTER_KERNEL("quantized_linear", DeviceType::kCPU, DType::kF32, QuantizedLinearCpu);
TFM_REGISTER_KERNEL("quantized_linear_no_bias", DeviceType::kCPU, DType::kF32, QuantizedLinearCpu);

}  // namespace

// The reference: the same integer sums and the same correction, one output
// at a time.
void Int8PanelsScalar(const Int8Product& p, int64_t first_panel, int64_t last_panel) {
  const int64_t stride = p.groups * kInt8GroupInputs;  // Inputs, padded.
  for (int64_t panel = first_panel; panel < last_panel; ++panel) {
    const int8_t* w = p.packed + panel * p.groups * kGroupBytes;
    for (int64_t j = 0; j < kInt8PanelColumns; ++j) {
      const int64_t column = panel * kInt8PanelColumns + j;
      if (column >= p.out) break;
      for (int64_t r = 0; r < p.rows; ++r) {
        int32_t sum = 0;
        for (int64_t k = 0; k < stride; ++k) {
          const int64_t group = k / kInt8GroupInputs;
          sum +=
              static_cast<int32_t>(
                  p.x[(group * p.rows + r) * kInt8GroupInputs + k % kInt8GroupInputs]) *
              w[(k / kInt8GroupInputs) * kGroupBytes + j * kInt8GroupInputs + k % kInt8GroupInputs];
        }
        const int32_t exact = sum - p.x_zero_points[r] * p.row_sums[column];
        float value = static_cast<float>(exact) * (p.x_scales[r] * p.scales[column]);
        if (p.bias != nullptr) value += p.bias[column];
        if (p.relu) value = std::max(value, 0.0f);
        p.y[r * p.out + column] = value;
      }
    }
  }
}

}  // namespace tfm
