// CUDA kernels of residual_layer_norm. A row belongs to one warp (d <= 1024)
// or to a whole block (longer rows), as in layer_norm. Each lane of a row
// takes whole Philox blocks (4 consecutive elements of the tensor, the
// dropout op's layout, so the masks are the CPU's bit for bit): the first
// pass forms sum = x + dropout(h + h_bias), stores it rounded to the storage
// type and sums it; the next passes read back only the lane's own elements,
// so no ordering between lanes is needed. The backward writes dx and dh in
// one pass per row and sums dgain, dbias and dh_bias over fixed chunks of
// rows (ops/cuda_column_sums.cuh).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "core/philox.h"
#include "ops/cuda_column_sums.cuh"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"
#include "ops/residual_layer_norm/residual_layer_norm_cuda.h"

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

// The 4 elements of one Philox block, as one 8- or 16-byte access.
template <typename D>
struct alignas(4 * sizeof(D)) Quad {
  D v[4];
};

// Calls f(block, begin, end) for the Philox blocks of the row's elements
// [first, first + d) that lane `lane` of a kWidth-thread group takes:
// block b covers elements 4b .. 4b + 3 of the tensor, of which [begin, end)
// lie in the row. The same lane gets the same blocks in every pass.
template <int kWidth, typename F>
__device__ __forceinline__ void ForLaneBlocks(int64_t first, int64_t d, int lane, F f) {
  const int64_t last = first + d;
  for (int64_t block = first / 4 + lane; 4 * block < last; block += kWidth) {
    f(block, 4 * block > first ? 4 * block : first, 4 * block + 4 < last ? 4 * block + 4 : last);
  }
}

// v[l] = p[4 block + l] as f32 for the elements in [begin, end), 0 for the
// others; one vector access when the block is whole and `quads` says the
// tensors are aligned for it.
template <typename D>
__device__ __forceinline__ void LoadQuad(const D* p, int64_t block, int64_t begin, int64_t end,
                                         bool quads, float (&v)[4]) {
  if (quads && end - begin == 4) {
    const Quad<D> q = reinterpret_cast<const Quad<D>*>(p)[block];
#pragma unroll
    for (int l = 0; l < 4; ++l) v[l] = ToFloat(q.v[l]);
    return;
  }
#pragma unroll
  for (int l = 0; l < 4; ++l) {
    const int64_t i = 4 * block + l;
    v[l] = i >= begin && i < end ? ToFloat(p[i]) : 0.0f;
  }
}

template <typename D>
__device__ __forceinline__ void StoreQuad(D* p, int64_t block, int64_t begin, int64_t end,
                                          bool quads, const float (&v)[4]) {
  if (quads && end - begin == 4) {
    Quad<D> q;
#pragma unroll
    for (int l = 0; l < 4; ++l) q.v[l] = FromFloat<D>(v[l]);
    reinterpret_cast<Quad<D>*>(p)[block] = q;
    return;
  }
#pragma unroll
  for (int l = 0; l < 4; ++l) {
    const int64_t i = 4 * block + l;
    if (i >= begin && i < end) p[i] = FromFloat<D>(v[l]);
  }
}

// The keep decisions of a block's 4 elements (all kept without dropout).
__device__ __forceinline__ void KeepBits(const ResidualDropoutLaunch& dropout, int64_t block,
                                         bool (&keep)[4]) {
  if (!dropout.enabled) {
#pragma unroll
    for (int l = 0; l < 4; ++l) keep[l] = true;
    return;
  }
  const philox::Uint4 bits = philox::Block(dropout.seed, dropout.stream_id, dropout.offset + block);
#pragma unroll
  for (int l = 0; l < 4; ++l) {
    keep[l] = philox::ToUniform(philox::Lane(bits, l)) >= dropout.threshold;
  }
}

// A kept value times the scale, a dropped one +0 (the dropout op's select).
__device__ __forceinline__ float Dropped(const ResidualDropoutLaunch& dropout, bool keep,
                                         float v) {
  return dropout.enabled ? (keep ? v * dropout.scale : 0.0f) : v;
}

// Every thread runs the same number of iterations of the row loop (it
// depends on the block only), so the group reductions see every thread;
// threads whose row is past the end reduce zeros and store nothing.
template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    ResidualLayerNormKernel(const D* __restrict__ x, const D* __restrict__ h,
                            const D* __restrict__ h_bias, const D* __restrict__ gain,
                            const D* __restrict__ bias, int64_t rows, int64_t d, float eps,
                            ResidualDropoutLaunch dropout, bool quads, D* __restrict__ out,
                            D* __restrict__ sum, float* __restrict__ mean,
                            float* __restrict__ rstd) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t group_row = static_cast<int64_t>(blockIdx.x) * kGroups; group_row < rows;
       group_row += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = group_row + group;
    const bool valid = row < rows;
    const int64_t first = (valid ? row : 0) * d;
    float total = 0.0f;
    if (valid) {
      ForLaneBlocks<kWidth>(first, d, lane, [&](int64_t block, int64_t begin, int64_t end) {
        float xv[4], hv[4], s[4];
        bool keep[4];
        LoadQuad(x, block, begin, end, quads, xv);
        LoadQuad(h, block, begin, end, quads, hv);
        KeepBits(dropout, block, keep);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
          const int64_t i = 4 * block + l;
          s[l] = 0.0f;
          if (i < begin || i >= end) continue;
          const float v = h_bias != nullptr ? hv[l] + ToFloat(h_bias[i - first]) : hv[l];
          // Rounded as stored: the statistics are of the sum backward reads.
          s[l] = ToFloat(FromFloat<D>(xv[l] + Dropped(dropout, keep[l], v)));
          total += s[l];
        }
        StoreQuad(sum, block, begin, end, quads, s);
      });
    }
    const float mu = GroupReduce<kWidth>(total, Sum(), &scratch) * inv_d;
    float squares = 0.0f;
    if (valid) {
      ForLaneBlocks<kWidth>(first, d, lane, [&](int64_t block, int64_t begin, int64_t end) {
        float s[4];
        LoadQuad(sum, block, begin, end, quads, s);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
          const int64_t i = 4 * block + l;
          const float deviation = i >= begin && i < end ? s[l] - mu : 0.0f;
          squares = fmaf(deviation, deviation, squares);
        }
      });
    }
    const float var = GroupReduce<kWidth>(squares, Sum(), &scratch) * inv_d;
    const float rs = 1.0f / sqrtf(var + eps);
    if (!valid) continue;
    ForLaneBlocks<kWidth>(first, d, lane, [&](int64_t block, int64_t begin, int64_t end) {
      float s[4], y[4];
      LoadQuad(sum, block, begin, end, quads, s);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const int64_t i = 4 * block + l;
        y[l] = 0.0f;
        if (i < begin || i >= end) continue;
        const int64_t j = i - first;
        y[l] = fmaf((s[l] - mu) * rs, ToFloat(gain[j]), ToFloat(bias[j]));
      }
      StoreQuad(out, block, begin, end, quads, y);
    });
    if (lane == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * gain
// and xhat = (sum - mean) * rstd, in layer_norm's order of operations; dh =
// dx through the mask.
template <int kWidth, typename D>
__global__ void __launch_bounds__(kThreads)
    ResidualLayerNormDxKernel(const D* __restrict__ dout, const D* __restrict__ sum,
                              const D* __restrict__ gain, const float* __restrict__ mean,
                              const float* __restrict__ rstd, int64_t rows, int64_t d,
                              ResidualDropoutLaunch dropout, bool quads, D* __restrict__ dx,
                              D* __restrict__ dh) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t group_row = static_cast<int64_t>(blockIdx.x) * kGroups; group_row < rows;
       group_row += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t row = group_row + group;
    const bool valid = row < rows;
    const int64_t first = (valid ? row : 0) * d;
    const float mu = valid ? mean[row] : 0.0f;
    const float rs = valid ? rstd[row] : 0.0f;
    float sum_g = 0.0f, sum_gx = 0.0f;
    if (valid) {
      ForLaneBlocks<kWidth>(first, d, lane, [&](int64_t block, int64_t begin, int64_t end) {
        float dy[4], s[4];
        LoadQuad(dout, block, begin, end, quads, dy);
        LoadQuad(sum, block, begin, end, quads, s);
#pragma unroll
        for (int l = 0; l < 4; ++l) {
          const int64_t i = 4 * block + l;
          if (i < begin || i >= end) continue;
          const float g = dy[l] * ToFloat(gain[i - first]);
          sum_g += g;
          sum_gx = fmaf(g, s[l] - mu, sum_gx);
        }
      });
    }
    const float mean_g = GroupReduce<kWidth>(sum_g, Sum(), &scratch) * inv_d;
    const float mean_gx = GroupReduce<kWidth>(sum_gx, Sum(), &scratch) * rs * inv_d;
    if (!valid) continue;
    ForLaneBlocks<kWidth>(first, d, lane, [&](int64_t block, int64_t begin, int64_t end) {
      float dy[4], s[4], dxv[4], dhv[4];
      bool keep[4];
      LoadQuad(dout, block, begin, end, quads, dy);
      LoadQuad(sum, block, begin, end, quads, s);
      KeepBits(dropout, block, keep);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const int64_t i = 4 * block + l;
        dxv[l] = dhv[l] = 0.0f;
        if (i < begin || i >= end) continue;
        const float xhat = (s[l] - mu) * rs;
        const float g = dy[l] * ToFloat(gain[i - first]);
        dxv[l] = rs * ((g - mean_g) - xhat * mean_gx);
        dhv[l] = Dropped(dropout, keep[l], dxv[l]);
      }
      StoreQuad(dx, block, begin, end, quads, dxv);
      StoreQuad(dh, block, begin, end, quads, dhv);
    });
  }
}

// Row r's terms in a column: of dgain (dout * xhat, by FMA, as layer_norm),
// dbias (dout) and, with kSums = 3, dh_bias (dh).
template <typename D, int kSums>
struct ColumnTerms {
  const D* __restrict__ dout;
  const D* __restrict__ sum;
  const D* __restrict__ dh;
  const float* __restrict__ mean;
  const float* __restrict__ rstd;
  int64_t d;
  __device__ __forceinline__ void operator()(int64_t r, int64_t column,
                                             float (&sums)[kSums]) const {
    const int64_t i = r * d + column;
    const float dy = ToFloat(dout[i]);
    sums[0] = fmaf(dy, (ToFloat(sum[i]) - mean[r]) * rstd[r], sums[0]);
    sums[1] += dy;
    if constexpr (kSums == 3) sums[2] += ToFloat(dh[i]);
  }
};

// Whether every pointer is aligned for Quad<D> accesses.
template <typename D>
bool QuadAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<uintptr_t>(p) % sizeof(Quad<D>) != 0) return false;
  }
  return true;
}

}  // namespace

template <typename T>
const char* LaunchResidualLayerNorm(const T* x, const T* h, const T* h_bias, const T* gain,
                                    const T* bias, int64_t rows, int64_t d, float eps,
                                    const ResidualDropoutLaunch& dropout, T* out, T* sum,
                                    float* mean, float* rstd, StreamHandle stream) {
  if (rows == 0) return nullptr;
  using D = DeviceT<T>;
  const bool quads = QuadAligned<D>({x, h, out, sum});
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  ForRowWidth(d, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    ResidualLayerNormKernel<kWidth, D><<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(
        reinterpret_cast<const D*>(x), reinterpret_cast<const D*>(h),
        reinterpret_cast<const D*>(h_bias), reinterpret_cast<const D*>(gain),
        reinterpret_cast<const D*>(bias), rows, d, eps, dropout, quads,
        reinterpret_cast<D*>(out), reinterpret_cast<D*>(sum), mean, rstd);
  });
  return LastError();
}

int64_t ResidualLayerNormBackwardWorkspaceFloats(int64_t rows, int64_t d) {
  return cuda_column_sums::WorkspaceFloats(rows, d, 3);
}

template <typename T>
const char* LaunchResidualLayerNormBackward(const T* dout, const T* sum, const T* gain,
                                            const float* mean, const float* rstd, int64_t rows,
                                            int64_t d, const ResidualDropoutLaunch& dropout,
                                            T* dx, T* dh, T* dgain, T* dbias, T* dh_bias,
                                            float* workspace, StreamHandle stream) {
  using D = DeviceT<T>;
  const auto* dyd = reinterpret_cast<const D*>(dout);
  const auto* sd = reinterpret_cast<const D*>(sum);
  auto* dhd = reinterpret_cast<D*>(dh);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (rows > 0) {
    const bool quads = QuadAligned<D>({dout, sum, dx, dh});
    ForRowWidth(d, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      ResidualLayerNormDxKernel<kWidth, D><<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(
          dyd, sd, reinterpret_cast<const D*>(gain), mean, rstd, rows, d, dropout, quads,
          reinterpret_cast<D*>(dx), dhd);
    });
    if (const char* error = LastError()) return error;
  }
  const ColumnOutputs<D> totals{{reinterpret_cast<D*>(dgain), reinterpret_cast<D*>(dbias),
                                 reinterpret_cast<D*>(dh_bias)}};
  if (dh_bias == nullptr) {
    return LaunchColumnSums<2>(ColumnTerms<D, 2>{dyd, sd, dhd, mean, rstd, d}, rows, d, workspace,
                               totals, s);
  }
  return LaunchColumnSums<3>(ColumnTerms<D, 3>{dyd, sd, dhd, mean, rstd, d}, rows, d, workspace,
                             totals, s);
}

#define TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(T)                                              \
  template const char* LaunchResidualLayerNorm<T>(const T*, const T*, const T*, const T*,        \
                                                  const T*, int64_t, int64_t, float,             \
                                                  const ResidualDropoutLaunch&, T*, T*, float*,  \
                                                  float*, StreamHandle);                         \
  template const char* LaunchResidualLayerNormBackward<T>(                                       \
      const T*, const T*, const T*, const float*, const float*, int64_t, int64_t,                \
      const ResidualDropoutLaunch&, T*, T*, T*, T*, T*, float*, StreamHandle)
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(float);
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(Half);
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(BFloat16);

}  // namespace tfm
