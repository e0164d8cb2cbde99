// CPU kernels of layer_norm. Rows are independent and split across threads;
// within a row every loop is contiguous and vectorised (reductions in
// vector accumulators, masked tails for d not a multiple of the lanes).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/vec.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"

TFM_ISA_BEGIN
namespace {

using simd::kLanes;
using simd::Load;
using simd::Store;
using simd::VecF;

// sum(x[0..n)), 4 vectors per step in four accumulators: the adds' latency
// (not the loads) would otherwise bound a 512-float row.
float Sum(const float* x, int64_t n) {
  VecF acc0 = simd::Zero(), acc1 = simd::Zero(), acc2 = simd::Zero(), acc3 = simd::Zero();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    acc0 = acc0 + Load(x + i);
    acc1 = acc1 + Load(x + i + kLanes);
    acc2 = acc2 + Load(x + i + 2 * kLanes);
    acc3 = acc3 + Load(x + i + 3 * kLanes);
  }
  simd::ForEachVector(i, n, [&](int64_t j, auto lanes) { acc0 = acc0 + Load(x + j, lanes); });
  return simd::ReduceSum((acc0 + acc1) + (acc2 + acc3));
}

// sum((x[i] - mu)^2): the second pass of the two-pass variance, four
// accumulators like Sum (an FMA's latency is longer still). Masked-off
// lanes of the tail must not add mu^2.
float SumSquaredDeviations(const float* x, int64_t n, float mu) {
  const VecF vmu = simd::Set(mu);
  VecF acc0 = simd::Zero(), acc1 = simd::Zero(), acc2 = simd::Zero(), acc3 = simd::Zero();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const VecF d0 = Load(x + i) - vmu;
    const VecF d1 = Load(x + i + kLanes) - vmu;
    const VecF d2 = Load(x + i + 2 * kLanes) - vmu;
    const VecF d3 = Load(x + i + 3 * kLanes) - vmu;
    acc0 = simd::MulAdd(d0, d0, acc0);
    acc1 = simd::MulAdd(d1, d1, acc1);
    acc2 = simd::MulAdd(d2, d2, acc2);
    acc3 = simd::MulAdd(d3, d3, acc3);
  }
  for (; i + kLanes <= n; i += kLanes) {
    const VecF d0 = Load(x + i) - vmu;
    acc0 = simd::MulAdd(d0, d0, acc0);
  }
  if (i < n) {
    const VecF d0 = simd::IfThenElseZero(simd::FirstN(n - i), simd::LoadFirst(x + i, n - i) - vmu);
    acc1 = simd::MulAdd(d0, d0, acc1);
  }
  return simd::ReduceSum((acc0 + acc1) + (acc2 + acc3));
}

// In one pass over a row: sum_g = sum(dy * gain) and
// sum_gx = sum(dy * gain * (x - mu)) (times rstd, that is sum(g * xhat)).
// Masked-off lanes load dy = 0, so they add nothing to either.
void GainSums(const float* dy, const float* gain, const float* x, int64_t n, float mu,
              float* sum_g, float* sum_gx) {
  const VecF vmu = simd::Set(mu);
  VecF acc_g = simd::Zero(), acc_gx = simd::Zero();
  simd::ForEachVector(0, n, [&](int64_t i, auto lanes) {
    const VecF g = Load(dy + i, lanes) * Load(gain + i, lanes);
    acc_g = acc_g + g;
    acc_gx = simd::MulAdd(g, Load(x + i, lanes) - vmu, acc_gx);
  });
  *sum_g = simd::ReduceSum(acc_g);
  *sum_gx = simd::ReduceSum(acc_gx);
}

// Rows per task: enough elements to outweigh the scheduling cost.
int64_t RowGrain(int64_t d) { return std::max<int64_t>(1, 16384 / d); }

// Backward's row chunks, each with its own dgain and dbias sums (added in
// chunk order at the end): counted from the shape alone, never from the
// thread count, so that every pool size gives the same bits. A chunk is at
// least a quarter of RowGrain; their count is a power of two (2, 4, 8 or 16
// threads split them evenly) and at most kMaxChunks (as in SumRowsCpu), so
// that merging the sums (2 d floats each) stays a small part of the work.
constexpr int64_t kMaxChunks = 16;
int64_t BackwardChunks(int64_t rows, int64_t d) {
  const int64_t fit = rows / std::max<int64_t>(1, RowGrain(d) / 4);
  int64_t chunks = 1;
  while (chunks * 2 <= std::min(fit, kMaxChunks)) chunks *= 2;
  return chunks;
}

}  // namespace

absl::Status LayerNormCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  // AllocateOutput's pointers stay valid: the outputs are sized up front.
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(2, DType::kF32));
  const float* in = x.data<float>();
  const float* gain = context.input(1).data<float>();
  const float* bias = context.input(2).data<float>();
  float* y = out->data<float>();
  float* means = mean->data<float>();
  float* rstds = rstd->data<float>();
  const float inv_d = 1.0f / static_cast<float>(d);
  context.thread_pool()->ParallelFor(rows, RowGrain(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = in + r * d;
      float* yr = y + r * d;
      // Two passes (mean, then squared deviations): no cancellation when the
      // mean is large against the spread.
      const float mu = Sum(xr, d) * inv_d;
      const float var = SumSquaredDeviations(xr, d, mu) * inv_d;
      const float rs = 1.0f / std::sqrt(var + static_cast<float>(eps));
      const VecF vmu = simd::Set(mu), vrs = simd::Set(rs);
      simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
        const VecF xhat = (Load(xr + i, lanes) - vmu) * vrs;
        Store(simd::MulAdd(xhat, Load(gain + i, lanes), Load(bias + i, lanes)), yr + i, lanes);
      });
      means[r] = mu;
      rstds[r] = rs;
    }
  });
  return absl::OkStatus();
}

// With xhat = (x - mean) * rstd and g = dout * gain, per row:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and over rows dgain = sum dout * xhat, dbias = sum dout. Each chunk of rows
// sums its dgain and dbias privately; the partial sums are added at the end.
absl::Status LayerNormBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& x = context.input(1);
  const Tensor& gain_tensor = context.input(2);
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, DType::kF32));
  const float* dy = dout.data<float>();
  const float* in = x.data<float>();
  const float* gain = gain_tensor.data<float>();
  const float* means = context.input(3).data<float>();
  const float* rstds = context.input(4).data<float>();
  float* dxs = dx->data<float>();
  const float inv_d = 1.0f / static_cast<float>(d);

  // One task per chunk, each with private [dgain | dbias] sums.
  const int64_t tasks = BackwardChunks(rows, d);
  std::vector<float> partial(tasks * 2 * d, 0.0f);
  context.thread_pool()->ParallelFor(tasks, 1, [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      float* pgain = partial.data() + task * 2 * d;
      float* pbias = pgain + d;
      for (int64_t r = rows * task / tasks; r < rows * (task + 1) / tasks; ++r) {
        const float* dyr = dy + r * d;
        const float* xr = in + r * d;
        float* dxr = dxs + r * d;
        const float mu = means[r], rs = rstds[r];
        float sum_g, sum_gx;
        GainSums(dyr, gain, xr, d, mu, &sum_g, &sum_gx);
        const float mean_g = sum_g * inv_d;
        const float mean_gx = sum_gx * rs * inv_d;
        const VecF vmu = simd::Set(mu), vrs = simd::Set(rs);
        const VecF vmean_g = simd::Set(mean_g), vmean_gx = simd::Set(mean_gx);
        simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
          const VecF dyv = Load(dyr + i, lanes);
          const VecF xhat = (Load(xr + i, lanes) - vmu) * vrs;
          const VecF g = dyv * Load(gain + i, lanes);
          Store(vrs * ((g - vmean_g) - xhat * vmean_gx), dxr + i, lanes);
          Store(Load(pgain + i, lanes) + dyv * xhat, pgain + i, lanes);
          Store(Load(pbias + i, lanes) + dyv, pbias + i, lanes);
        });
      }
    }
  });
  float* dg = dgain->data<float>();
  float* db = dbias->data<float>();
  std::fill(dg, dg + d, 0.0f);
  std::fill(db, db + d, 0.0f);
  // In chunk order; vectorised by hand (GCC leaves this loop scalar: the
  // pointers may alias), which rounds each element's sum exactly as scalar
  // adds would.
  for (int64_t task = 0; task < tasks; ++task) {
    const float* pgain = partial.data() + task * 2 * d;
    const float* pbias = pgain + d;
    simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
      Store(Load(dg + i, lanes) + Load(pgain + i, lanes), dg + i, lanes);
      Store(Load(db + i, lanes) + Load(pbias + i, lanes), db + i, lanes);
    });
  }
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("layer_norm", DType::kF32, LayerNormCpu);
TFM_REGISTER_ISA_KERNEL("layer_norm_backward", DType::kF32, LayerNormBackwardCpu);
