// CPU kernels of layer_norm. Rows are independent and split across threads;
// within a row every loop is contiguous and vectorisable (cpu_math).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/row_math.h"
#include "ops/layer_norm/layer_norm.h"

namespace tfm {
namespace {

using cpu_math::LaneSum;

// Rows per task: enough elements to outweigh the scheduling cost.
int64_t RowGrain(int64_t d) { return std::max<int64_t>(1, 16384 / d); }

absl::Status LayerNormCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double eps,
                       context.attrs().GetOr<double>("eps", kLayerNormDefaultEps));
  const int64_t d = x.dim(-1);
  const int64_t rows = x.num_elements() / d;
  const Shape row_shape(x.shape().begin(), x.shape().end() - 1);
  // Handles, not AllocateOutput's pointers: those move when the outputs grow.
  TFM_ASSIGN_OR_RETURN(const Tensor out, Tensor::Empty(x.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(const Tensor mean, Tensor::Empty(row_shape, DType::kF32));
  TFM_ASSIGN_OR_RETURN(const Tensor rstd, Tensor::Empty(row_shape, DType::kF32));
  context.SetOutput(0, out);
  context.SetOutput(1, mean);
  context.SetOutput(2, rstd);
  const float* in = x.data<float>();
  const float* gain = context.input(1).data<float>();
  const float* bias = context.input(2).data<float>();
  float* y = out.data<float>();
  float* means = mean.data<float>();
  float* rstds = rstd.data<float>();
  const float inv_d = 1.0f / static_cast<float>(d);
  context.thread_pool()->ParallelFor(rows, RowGrain(d), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = in + r * d;
      float* yr = y + r * d;
      // Two passes (mean, then squared deviations): no cancellation when the
      // mean is large against the spread.
      const float mu = LaneSum(d, [&](int64_t i) { return xr[i]; }) * inv_d;
      const float var = LaneSum(d, [&](int64_t i) { return (xr[i] - mu) * (xr[i] - mu); }) * inv_d;
      const float rs = 1.0f / std::sqrt(var + static_cast<float>(eps));
      for (int64_t i = 0; i < d; ++i) yr[i] = (xr[i] - mu) * rs * gain[i] + bias[i];
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
  const int64_t rows = x.num_elements() / d;
  TFM_ASSIGN_OR_RETURN(const Tensor dx, Tensor::Empty(x.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(const Tensor dgain, Tensor::Empty({d}, DType::kF32));
  TFM_ASSIGN_OR_RETURN(const Tensor dbias, Tensor::Empty({d}, DType::kF32));
  context.SetOutput(0, dx);
  context.SetOutput(1, dgain);
  context.SetOutput(2, dbias);
  const float* dy = dout.data<float>();
  const float* in = x.data<float>();
  const float* gain = gain_tensor.data<float>();
  const float* means = context.input(3).data<float>();
  const float* rstds = context.input(4).data<float>();
  float* dxs = dx.data<float>();
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
        const float mean_g = LaneSum(d, [&](int64_t i) { return dyr[i] * gain[i]; }) * inv_d;
        const float mean_gx =
            LaneSum(d, [&](int64_t i) { return dyr[i] * gain[i] * (xr[i] - mu) * rs; }) * inv_d;
        for (int64_t i = 0; i < d; ++i) {
          const float xhat = (xr[i] - mu) * rs;
          dxr[i] = rs * (dyr[i] * gain[i] - mean_g - xhat * mean_gx);
          pgain[i] += dyr[i] * xhat;
          pbias[i] += dyr[i];
        }
      }
    }
  });
  float* dg = dgain.data<float>();
  float* db = dbias.data<float>();
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
