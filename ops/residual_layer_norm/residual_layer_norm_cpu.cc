// CPU kernels of residual_layer_norm. Rows are split across threads as in
// layer_norm; each row is first made (sum = x + dropped h, or dh from dx)
// and then normalised while it is in the cache, by layer_norm's own row
// loops (ops/layer_norm/layer_norm_rows_cpu.h), so the results are those of
// dropout, add and layer_norm, bit for bit. The mask of a row's elements
// comes kLanes Philox blocks at a time (simd::ForEachKeep in
// ops/cpu_math/philox_simd.h: element i from block offset + i / 4, lane
// i % 4, as the dropout op draws it).
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/op_registry.h"
#include "core/philox.h"
#include "core/rng.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/philox_simd.h"
#include "ops/cpu_math/vec.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"
#include "ops/layer_norm/layer_norm_rows_cpu.h"
#include "ops/residual_layer_norm/residual_layer_norm_kernel_args.h"

TFM_ISA_BEGIN
namespace {

using simd::kLanes;
using simd::Load;
using simd::Store;
using simd::VecF;

// sum[j] = x[j] + dropout(h[j] + h_bias[j]) for the row of d elements that
// starts at element `first` of the tensor; h_bias may be null. Dropped
// elements add +0 (a NaN dropped is gone), as the dropout op writes them.
void ResidualRow(const ResidualDropoutArgs& dropout, int64_t first, const float* x, const float* h,
                 const float* h_bias, int64_t d, float* sum) {
  auto sublayer = [&](int64_t j, auto lanes) {
    return h_bias != nullptr ? Load(h + j, lanes) + Load(h_bias + j, lanes) : Load(h + j, lanes);
  };
  if (dropout.scaling.p == 0.0) {
    simd::ForEachVector(0, d, [&](int64_t j, auto lanes) {
      Store(Load(x + j, lanes) + sublayer(j, lanes), sum + j, lanes);
    });
    return;
  }
  const float scale = dropout.scaling.scale;
  const VecF vscale = simd::Set(scale);
  simd::ForEachKeep(
      dropout.state, dropout.scaling.threshold, first, d,
      [&](int64_t j, simd::Mask keep) {
        const VecF dropped = simd::IfThenElseZero(keep, sublayer(j, simd::AllLanes{}) * vscale);
        Store(Load(x + j) + dropped, sum + j);
      },
      [&](int64_t j, bool keep) {
        const float value = h_bias != nullptr ? h[j] + h_bias[j] : h[j];
        sum[j] = x[j] + (keep ? value * scale : 0.0f);
      });
}

// dh[j] = dx[j] through the row's mask (as ResidualRow), and when dh_sum is
// given, dh added into it (the chunk's dh_bias sums).
void DropoutRowBackward(const ResidualDropoutArgs& dropout, int64_t first, const float* dx,
                        int64_t d, float* dh, float* dh_sum) {
  if (dropout.scaling.p == 0.0) {
    std::memcpy(dh, dx, d * sizeof(float));
  } else {
    const float scale = dropout.scaling.scale;
    const VecF vscale = simd::Set(scale);
    simd::ForEachKeep(
        dropout.state, dropout.scaling.threshold, first, d,
        [&](int64_t j, simd::Mask keep) {
          Store(simd::IfThenElseZero(keep, Load(dx + j) * vscale), dh + j);
        },
        [&](int64_t j, bool keep) { dh[j] = keep ? dx[j] * scale : 0.0f; });
  }
  if (dh_sum == nullptr) return;
  simd::ForEachVector(0, d, [&](int64_t j, auto lanes) {
    Store(Load(dh_sum + j, lanes) + Load(dh + j, lanes), dh_sum + j, lanes);
  });
}

}  // namespace

// Serves residual_layer_norm and residual_bias_layer_norm.
absl::Status ResidualLayerNormCpu(KernelContext& context) {
  const ResidualLayerNormInputs in = ReadResidualLayerNormInputs(context);
  TFM_ASSIGN_OR_RETURN(const ResidualDropoutArgs dropout, ReadResidualDropoutArgs(context));
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  const int64_t d = in.x.dim(-1);
  const int64_t rows = NumRows(in.x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * sum, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(2, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(3, DType::kF32));
  const float* x = in.x.data<float>();
  const float* h = in.h.data<float>();
  const float* h_bias = in.h_bias != nullptr ? in.h_bias->data<float>() : nullptr;
  const float* gain = in.gain.data<float>();
  const float* bias = in.bias.data<float>();
  float* y = out->data<float>();
  float* sums = sum->data<float>();
  float* means = mean->data<float>();
  float* rstds = rstd->data<float>();
  context.thread_pool()->ParallelFor(
      rows, layer_norm_rows::RowGrain(d), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          ResidualRow(dropout, r * d, x + r * d, h + r * d, h_bias, d, sums + r * d);
          layer_norm_rows::NormalizeRow(sums + r * d, gain, bias, d, static_cast<float>(eps),
                                        y + r * d, means + r, rstds + r);
        }
      });
  return absl::OkStatus();
}

// Per row: dx as layer_norm_backward, then dh = dx through the mask. Over
// rows dgain, dbias (and dh_bias) in layer_norm_backward's chunks, so they
// too have its bits.
absl::Status ResidualLayerNormBackwardCpu(KernelContext& context) {
  const Tensor& sum = context.input(1);
  TFM_ASSIGN_OR_RETURN(const ResidualDropoutArgs dropout, ReadResidualDropoutArgs(context));
  TFM_ASSIGN_OR_RETURN(const bool has_h_bias, HasHBias(context));
  const int64_t d = sum.dim(-1);
  const int64_t rows = NumRows(sum.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dh, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(2, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(3, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dh_bias, context.AllocateOutput(4, DType::kF32));
  const float* dy = context.input(0).data<float>();
  const float* sums = sum.data<float>();
  const float* gain = context.input(2).data<float>();
  const float* means = context.input(3).data<float>();
  const float* rstds = context.input(4).data<float>();
  float* dxs = dx->data<float>();
  float* dhs = dh->data<float>();

  // One task per chunk, each with private [dgain | dbias | dh_bias] sums.
  const int num_sums = has_h_bias ? 3 : 2;
  const int64_t tasks = layer_norm_rows::BackwardChunks(rows, d);
  std::vector<float> partial(tasks * num_sums * d, 0.0f);
  context.thread_pool()->ParallelFor(tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      float* pgain = partial.data() + task * num_sums * d;
      float* pdh = has_h_bias ? pgain + 2 * d : nullptr;
      for (int64_t r = rows * task / tasks; r < rows * (task + 1) / tasks; ++r) {
        const int64_t first = r * d;
        layer_norm_rows::NormalizeRowBackward(dy + first, sums + first, gain, means[r], rstds[r],
                                              d, dxs + first, pgain, pgain + d);
        DropoutRowBackward(dropout, first, dxs + first, d, dhs + first, pdh);
      }
    }
  });
  float* const totals[3] = {dgain->data<float>(), dbias->data<float>(),
                            has_h_bias ? dh_bias->data<float>() : nullptr};
  layer_norm_rows::AddChunkSums(partial.data(), tasks, num_sums, d, totals);
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("residual_layer_norm", DType::kF32, ResidualLayerNormCpu);
TFM_REGISTER_ISA_KERNEL("residual_bias_layer_norm", DType::kF32, ResidualLayerNormCpu);
TFM_REGISTER_ISA_KERNEL("residual_layer_norm_backward", DType::kF32,
                        ResidualLayerNormBackwardCpu);
