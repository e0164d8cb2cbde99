// CUDA kernels of layer_norm. A row belongs to one warp (d <= 1024) or to a
// whole block (longer rows) and is read from global memory once per pass:
// the mean, the squared deviations around it (two passes, as the CPU, so a
// large mean does not cancel the variance), then the output. The backward
// writes dx the same way and sums dgain and dbias over fixed chunks of rows
// (one thread per column, coalesced) before adding the chunks in order
// (ops/cuda_column_sums.cuh).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "ops/cuda_column_sums.cuh"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"
#include "ops/layer_norm/layer_norm_cuda.h"

namespace tfm {
namespace {

using cuda_column_sums::ColumnOutputs;
using cuda_column_sums::LaunchColumnSums;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::LastError;
using cuda_elementwise::ToFloat;
using cuda_row_reduce::ForRowWidth;
using cuda_row_reduce::GroupReduce;
using cuda_row_reduce::GroupScratch;
using cuda_row_reduce::RowBlocks;
using cuda_row_reduce::Sum;

constexpr int kThreads = cuda_row_reduce::kRowThreads;

// Every thread runs the same number of iterations of the row loop (it
// depends on the block only), so the group reductions see every thread;
// threads whose row is past the end reduce zeros and store nothing.
template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    LayerNormKernel(const D* __restrict__ x, const D* __restrict__ gain, const D* __restrict__ bias,
                    int64_t rows, int64_t d, float eps, D* __restrict__ out,
                    float* __restrict__ mean, float* __restrict__ rstd) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < rows;
    const D* xr = x + (valid ? row : 0) * d;
    float sum = 0.0f;
    if (valid) {
      for (int64_t i = lane; i < d; i += kWidth) sum += ToFloat(xr[i]);
    }
    const float mu = GroupReduce<kWidth>(sum, Sum(), &scratch) * inv_d;
    float squares = 0.0f;
    if (valid) {
      for (int64_t i = lane; i < d; i += kWidth) {
        const float deviation = ToFloat(xr[i]) - mu;
        squares = fmaf(deviation, deviation, squares);
      }
    }
    const float var = GroupReduce<kWidth>(squares, Sum(), &scratch) * inv_d;
    const float rs = 1.0f / sqrtf(var + eps);
    if (!valid) continue;
    D* yr = out + row * d;
    for (int64_t i = lane; i < d; i += kWidth) {
      const float xhat = (ToFloat(xr[i]) - mu) * rs;
      yr[i] = FromFloat<D>(fmaf(xhat, ToFloat(gain[i]), ToFloat(bias[i])));
    }
    if (lane == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * gain, in
// LayerNormBackwardCpu's order of operations.
template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    LayerNormDxKernel(const D* __restrict__ dout, const D* __restrict__ x,
                      const D* __restrict__ gain, const float* __restrict__ mean,
                      const float* __restrict__ rstd, int64_t rows, int64_t d, D* __restrict__ dx) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kGroups; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool valid = row < rows;
    const int64_t offset = (valid ? row : 0) * d;
    const D* dyr = dout + offset;
    const D* xr = x + offset;
    const float mu = valid ? mean[row] : 0.0f;
    const float rs = valid ? rstd[row] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f;
    if (valid) {
      for (int64_t i = lane; i < d; i += kWidth) {
        const float g = ToFloat(dyr[i]) * ToFloat(gain[i]);
        sum_g += g;
        sum_gx = fmaf(g, ToFloat(xr[i]) - mu, sum_gx);
      }
    }
    const float mean_g = GroupReduce<kWidth>(sum_g, Sum(), &scratch) * inv_d;
    const float mean_gx = GroupReduce<kWidth>(sum_gx, Sum(), &scratch) * rs * inv_d;
    if (!valid) continue;
    D* dxr = dx + offset;
    for (int64_t i = lane; i < d; i += kWidth) {
      const float xhat = (ToFloat(xr[i]) - mu) * rs;
      const float g = ToFloat(dyr[i]) * ToFloat(gain[i]);
      dxr[i] = FromFloat<D>(rs * ((g - mean_g) - xhat * mean_gx));
    }
  }
}

// Row r's terms of dgain (dout * xhat, by FMA) and dbias (dout) in a column.
template <typename D>
struct GainAndBiasTerms {
  const D* __restrict__ dout;
  const D* __restrict__ x;
  const float* __restrict__ mean;
  const float* __restrict__ rstd;
  int64_t d;
  __device__ __forceinline__ void operator()(int64_t r, int64_t column, float (&sums)[2]) const {
    const float dy = ToFloat(dout[r * d + column]);
    sums[0] = fmaf(dy, (ToFloat(x[r * d + column]) - mean[r]) * rstd[r], sums[0]);
    sums[1] += dy;
  }
};

}  // namespace

template <typename T>
const char* LaunchLayerNorm(const T* x, const T* gain, const T* bias, int64_t rows, int64_t d,
                            float eps, T* out, float* mean, float* rstd, StreamHandle stream) {
  if (rows == 0) return nullptr;
  using D = DeviceT<T>;
  const auto* xd = reinterpret_cast<const D*>(x);
  const auto* gd = reinterpret_cast<const D*>(gain);
  const auto* bd = reinterpret_cast<const D*>(bias);
  auto* yd = reinterpret_cast<D*>(out);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  ForRowWidth(d, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    LayerNormKernel<kWidth, D>
        <<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(xd, gd, bd, rows, d, eps, yd, mean, rstd);
  });
  return LastError();
}

int64_t LayerNormBackwardWorkspaceFloats(int64_t rows, int64_t d) {
  return cuda_column_sums::WorkspaceFloats(rows, d, 2);
}

template <typename T>
const char* LaunchLayerNormBackward(const T* dout, const T* x, const T* gain, const float* mean,
                                    const float* rstd, int64_t rows, int64_t d, T* dx, T* dgain,
                                    T* dbias, float* workspace, StreamHandle stream) {
  using D = DeviceT<T>;
  const auto* dyd = reinterpret_cast<const D*>(dout);
  const auto* xd = reinterpret_cast<const D*>(x);
  const auto* gd = reinterpret_cast<const D*>(gain);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (rows > 0) {
    auto* dxd = reinterpret_cast<D*>(dx);
    ForRowWidth(d, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      LayerNormDxKernel<kWidth, D>
          <<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(dyd, xd, gd, mean, rstd, rows, d, dxd);
    });
    if (const char* error = LastError()) return error;
  }
  return LaunchColumnSums<2>(GainAndBiasTerms<D>{dyd, xd, mean, rstd, d}, rows, d, workspace,
                             ColumnOutputs<D>{{reinterpret_cast<D*>(dgain),
                                               reinterpret_cast<D*>(dbias)}},
                             s);
}

#define TFM_INSTANTIATE_LAYER_NORM_CUDA(T)                                                       \
  template const char* LaunchLayerNorm<T>(const T*, const T*, const T*, int64_t, int64_t, float, \
                                          T*, float*, float*, StreamHandle);                     \
  template const char* LaunchLayerNormBackward<T>(const T*, const T*, const T*, const float*,    \
                                                  const float*, int64_t, int64_t, T*, T*, T*,    \
                                                  float*, StreamHandle)
TFM_INSTANTIATE_LAYER_NORM_CUDA(float);
TFM_INSTANTIATE_LAYER_NORM_CUDA(Half);
TFM_INSTANTIATE_LAYER_NORM_CUDA(BFloat16);

}  // namespace tfm
