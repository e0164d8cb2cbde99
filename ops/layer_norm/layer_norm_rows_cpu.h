// The row loops of the CPU layer_norm kernels, shared with the fused
// residual_layer_norm kernels (ops/residual_layer_norm) so that both give the
// same bits for the same row: a fused kernel that normalises x + Dropout(h)
// equals dropout, add and layer_norm run one after the other. Every loop is
// contiguous and vectorised (reductions in vector accumulators, masked tails
// for d not a multiple of the lanes).
#ifndef TFM_OPS_LAYER_NORM_LAYER_NORM_ROWS_CPU_H_
#define TFM_OPS_LAYER_NORM_LAYER_NORM_ROWS_CPU_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace layer_norm_rows {

using simd::kLanes;
using simd::Load;
using simd::Store;
using simd::VecF;

// sum(x[0..n)), 4 vectors per step in four accumulators: the adds' latency
// (not the loads) would otherwise bound a 512-float row.
inline float Sum(const float* x, int64_t n) {
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
inline float SumSquaredDeviations(const float* x, int64_t n, float mu) {
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
inline void GainSums(const float* dy, const float* gain, const float* x, int64_t n, float mu,
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
inline int64_t RowGrain(int64_t d) { return std::max<int64_t>(1, 16384 / d); }

// Backward's row chunks, each with its own dgain and dbias sums (added in
// chunk order at the end): counted from the shape alone, never from the
// thread count, so that every pool size gives the same bits. A chunk is at
// least a quarter of RowGrain; their count is a power of two (2, 4, 8 or 16
// threads split them evenly) and at most kMaxChunks (as in SumRowsCpu), so
// that merging the sums (2 d floats each) stays a small part of the work.
inline constexpr int64_t kMaxChunks = 16;
inline int64_t BackwardChunks(int64_t rows, int64_t d) {
  const int64_t fit = rows / std::max<int64_t>(1, RowGrain(d) / 4);
  int64_t chunks = 1;
  while (chunks * 2 <= std::min(fit, kMaxChunks)) chunks *= 2;
  return chunks;
}

// One row of the forward: y = (x - mean) * rstd * gain + bias, with the
// mean and rstd it returns. Two passes (mean, then squared deviations): no
// cancellation when the mean is large against the spread.
inline void NormalizeRow(const float* x, const float* gain, const float* bias, int64_t d,
                         float eps, float* y, float* mean, float* rstd) {
  const float inv_d = 1.0f / static_cast<float>(d);
  const float mu = Sum(x, d) * inv_d;
  const float var = SumSquaredDeviations(x, d, mu) * inv_d;
  const float rs = 1.0f / std::sqrt(var + eps);
  const VecF vmu = simd::Set(mu), vrs = simd::Set(rs);
  simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
    const VecF xhat = (Load(x + i, lanes) - vmu) * vrs;
    Store(simd::MulAdd(xhat, Load(gain + i, lanes), Load(bias + i, lanes)), y + i, lanes);
  });
  *mean = mu;
  *rstd = rs;
}

// One row of the backward. With xhat = (x - mean) * rstd and g = dy * gain:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and the row's dy * xhat and dy added into pgain and pbias (its chunk's
// dgain and dbias sums).
inline void NormalizeRowBackward(const float* dy, const float* x, const float* gain, float mu,
                                 float rs, int64_t d, float* dx, float* pgain, float* pbias) {
  const float inv_d = 1.0f / static_cast<float>(d);
  float sum_g, sum_gx;
  GainSums(dy, gain, x, d, mu, &sum_g, &sum_gx);
  const float mean_g = sum_g * inv_d;
  const float mean_gx = sum_gx * rs * inv_d;
  const VecF vmu = simd::Set(mu), vrs = simd::Set(rs);
  const VecF vmean_g = simd::Set(mean_g), vmean_gx = simd::Set(mean_gx);
  simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
    const VecF dyv = Load(dy + i, lanes);
    const VecF xhat = (Load(x + i, lanes) - vmu) * vrs;
    const VecF g = dyv * Load(gain + i, lanes);
    Store(vrs * ((g - vmean_g) - xhat * vmean_gx), dx + i, lanes);
    Store(Load(pgain + i, lanes) + dyv * xhat, pgain + i, lanes);
    Store(Load(pbias + i, lanes) + dyv, pbias + i, lanes);
  });
}

// totals[k][0..d) = sum over chunks c, in chunk order, of partial[c][k][..]
// for k < sums, where chunk c's sums lie at partial + c * sums * d. Vectorised
// by hand (GCC leaves this loop scalar: the pointers may alias), which rounds
// each element's sum exactly as scalar adds would.
inline void AddChunkSums(const float* partial, int64_t chunks, int sums, int64_t d,
                         float* const* totals) {
  for (int k = 0; k < sums; ++k) std::fill(totals[k], totals[k] + d, 0.0f);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    for (int k = 0; k < sums; ++k) {
      const float* p = partial + (chunk * sums + k) * d;
      float* total = totals[k];
      simd::ForEachVector(0, d, [&](int64_t i, auto lanes) {
        Store(Load(total + i, lanes) + Load(p + i, lanes), total + i, lanes);
      });
    }
  }
}

}  // namespace layer_norm_rows
TFM_ISA_END

#endif  // TFM_OPS_LAYER_NORM_LAYER_NORM_ROWS_CPU_H_
