// CPU kernels of layer_norm. Rows are independent and split across threads;
// within a row every loop is contiguous and AVX2 (reductions in vector
// accumulators, scalar tails for d not a multiple of 8).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/layer_norm/layer_norm.h"

namespace tfm {
namespace {

// sum(x[0..n)), 32 floats per step in four accumulators: the adds' latency
// (not the loads) would otherwise bound a 512-float row.
float Sum(const float* x, int64_t n) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef TFM_SIMD_AVX2
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(x + i));
    acc1 = _mm256_add_ps(acc1, _mm256_loadu_ps(x + i + 8));
    acc2 = _mm256_add_ps(acc2, _mm256_loadu_ps(x + i + 16));
    acc3 = _mm256_add_ps(acc3, _mm256_loadu_ps(x + i + 24));
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_add_ps(acc0, _mm256_loadu_ps(x + i));
  sum = simd::HorizontalSum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
#endif
  for (; i < n; ++i) sum += x[i];
  return sum;
}

// sum((x[i] - mu)^2): the second pass of the two-pass variance, four
// accumulators like Sum (an FMA's latency is longer still).
float SumSquaredDeviations(const float* x, int64_t n, float mu) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef TFM_SIMD_AVX2
  const __m256 vmu = _mm256_set1_ps(mu);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  for (; i + 32 <= n; i += 32) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmu);
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vmu);
    const __m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), vmu);
    const __m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), vmu);
    acc0 = _mm256_fmadd_ps(d0, d0, acc0);
    acc1 = _mm256_fmadd_ps(d1, d1, acc1);
    acc2 = _mm256_fmadd_ps(d2, d2, acc2);
    acc3 = _mm256_fmadd_ps(d3, d3, acc3);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), vmu);
    acc0 = _mm256_fmadd_ps(d0, d0, acc0);
  }
  sum = simd::HorizontalSum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
#endif
  for (; i < n; ++i) sum += (x[i] - mu) * (x[i] - mu);
  return sum;
}

// In one pass over a row: sum_g = sum(dy * gain) and
// sum_gx = sum(dy * gain * (x - mu)) (times rstd, that is sum(g * xhat)).
void GainSums(const float* dy, const float* gain, const float* x, int64_t n, float mu,
              float* sum_g, float* sum_gx) {
  int64_t i = 0;
  float g_total = 0.0f, gx_total = 0.0f;
#ifdef TFM_SIMD_AVX2
  const __m256 vmu = _mm256_set1_ps(mu);
  __m256 acc_g = _mm256_setzero_ps(), acc_gx = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_mul_ps(_mm256_loadu_ps(dy + i), _mm256_loadu_ps(gain + i));
    acc_g = _mm256_add_ps(acc_g, g);
    acc_gx = _mm256_fmadd_ps(g, _mm256_sub_ps(_mm256_loadu_ps(x + i), vmu), acc_gx);
  }
  g_total = simd::HorizontalSum(acc_g);
  gx_total = simd::HorizontalSum(acc_gx);
#endif
  for (; i < n; ++i) {
    const float g = dy[i] * gain[i];
    g_total += g;
    gx_total += g * (x[i] - mu);
  }
  *sum_g = g_total;
  *sum_gx = gx_total;
}

// Rows per task: enough elements to outweigh the scheduling cost.
int64_t RowGrain(int64_t d) { return std::max<int64_t>(1, 16384 / d); }

absl::Status LayerNormCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double eps,
                       context.attrs().GetOr<double>("eps", kLayerNormDefaultEps));
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  const Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  // AllocateOutput's pointers stay valid: the outputs are sized up front.
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(1, row_shape, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(2, row_shape, DType::kF32));
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
      int64_t i = 0;
#ifdef TFM_SIMD_AVX2
      const __m256 vmu = _mm256_set1_ps(mu), vrs = _mm256_set1_ps(rs);
      for (; i + 8 <= d; i += 8) {
        const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vmu), vrs);
        _mm256_storeu_ps(yr + i,
                         _mm256_fmadd_ps(xhat, _mm256_loadu_ps(gain + i), _mm256_loadu_ps(bias + i)));
      }
#endif
      for (; i < d; ++i) yr[i] = (xr[i] - mu) * rs * gain[i] + bias[i];
      means[r] = mu;
      rstds[r] = rs;
    }
  });
  return absl::OkStatus();
}

// With xhat = (x - mean) * rstd and g = dout * gain, per row:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and over rows dgain = sum dout * xhat, dbias = sum dout. Each task sums its
// rows' dgain and dbias privately; the partial sums are added at the end.
absl::Status LayerNormBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& x = context.input(1);
  const Tensor& gain_tensor = context.input(2);
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, x.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(1, {d}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, {d}, DType::kF32));
  const float* dy = dout.data<float>();
  const float* in = x.data<float>();
  const float* gain = gain_tensor.data<float>();
  const float* means = context.input(3).data<float>();
  const float* rstds = context.input(4).data<float>();
  float* dxs = dx->data<float>();
  const float inv_d = 1.0f / static_cast<float>(d);

  // One task per thread (at most), each with private [dgain | dbias] sums.
  const int64_t tasks = std::max<int64_t>(
      1, std::min<int64_t>(context.thread_pool()->num_threads(), rows / RowGrain(d)));
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
        int64_t i = 0;
#ifdef TFM_SIMD_AVX2
        const __m256 vmu = _mm256_set1_ps(mu), vrs = _mm256_set1_ps(rs);
        const __m256 vmean_g = _mm256_set1_ps(mean_g), vmean_gx = _mm256_set1_ps(mean_gx);
        for (; i + 8 <= d; i += 8) {
          const __m256 dyv = _mm256_loadu_ps(dyr + i);
          const __m256 xhat = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(xr + i), vmu), vrs);
          const __m256 g = _mm256_mul_ps(dyv, _mm256_loadu_ps(gain + i));
          const __m256 inner =
              _mm256_sub_ps(_mm256_sub_ps(g, vmean_g), _mm256_mul_ps(xhat, vmean_gx));
          _mm256_storeu_ps(dxr + i, _mm256_mul_ps(vrs, inner));
          _mm256_storeu_ps(pgain + i,
                           _mm256_add_ps(_mm256_loadu_ps(pgain + i), _mm256_mul_ps(dyv, xhat)));
          _mm256_storeu_ps(pbias + i, _mm256_add_ps(_mm256_loadu_ps(pbias + i), dyv));
        }
#endif
        for (; i < d; ++i) {
          const float xhat = (xr[i] - mu) * rs;
          dxr[i] = rs * (dyr[i] * gain[i] - mean_g - xhat * mean_gx);
          pgain[i] += dyr[i] * xhat;
          pbias[i] += dyr[i];
        }
      }
    }
  });
  float* dg = dgain->data<float>();
  float* db = dbias->data<float>();
  std::fill(dg, dg + d, 0.0f);
  std::fill(db, db + d, 0.0f);
  for (int64_t task = 0; task < tasks; ++task) {
    const float* pgain = partial.data() + task * 2 * d;
    for (int64_t i = 0; i < d; ++i) {
      dg[i] += pgain[i];
      db[i] += pgain[d + i];
    }
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("layer_norm", DeviceType::kCPU, DType::kF32, LayerNormCpu);
TFM_REGISTER_KERNEL("layer_norm_backward", DeviceType::kCPU, DType::kF32, LayerNormBackwardCpu);

}  // namespace
}  // namespace tfm
