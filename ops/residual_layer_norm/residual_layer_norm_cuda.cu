// CUDA kernels of residual_layer_norm. A row belongs to one warp (d <= 1024)
// or to a whole block (longer rows), as in layer_norm. Each lane of a row
// takes whole Philox blocks (4 consecutive elements of the tensor, the
// dropout op's layout, so the masks are the CPU's bit for bit).
//
// The kernels are memory-bound, so the common case moves each byte once.
// When rows start Philox blocks (d a multiple of 4) and every tensor is
// aligned for 4-element quads, the row kernels take it: lane l owns quads
// l, l + width, ... of every row, the blocks the general kernels give it,
// so its sums run in their order and out, sum, mean, rstd, dx and dh are
// theirs bit for bit.
// - Forward, a warp per row (d <= 1024): x and h are loaded as quads up
//   front, sum = x + dropout(h + h_bias) is stored rounded once and kept in
//   registers (at most 8 quads a lane) for the mean, the squared deviations
//   and out, where the general kernel read it back twice; gain and bias come
//   as quads.
// - Backward, a block per chunk of rows (backward_chunks.h: in whole waves
//   of the blocks the GPU holds, so the chunks follow the GPU's
//   multiprocessor count as well as the shape), a warp per
//   row (d <= 1024) or the block per row (d <= 4096): dout and sum are read
//   once (the general path read them three times: twice for dx, once more
//   for the column sums), the next one or two rows' quads are loaded
//   before the current row is reduced, dx and dh are written, and each lane
//   adds the row's terms of dgain, dbias and dh_bias for its own columns
//   into registers. The block adds its warps' sums in shared memory warp by warp
//   in index order into its chunk's partials, and ColumnTotalsKernel adds
//   the chunks in order: no atomics, the same bits on every run on a GPU,
//   though not the general path's bits (another order of the same terms).
// Other problems take the general kernels: the first pass forms sum, stores
// it and sums it; the next passes read back only the lane's own elements,
// so no ordering between lanes is needed; the backward writes dx and dh in
// one pass per row and sums dgain, dbias and dh_bias over fixed chunks of
// rows (ops/cuda_column_sums.cuh). TFM_LAYER_NORM_FUSED=0 sends every
// problem there, to time the two on one GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "core/env_setting.h"
#include "core/philox.h"
#include "ops/cuda_column_sums.cuh"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"
#include "ops/residual_layer_norm/backward_chunks.h"
#include "ops/residual_layer_norm/residual_layer_norm_cuda.h"

namespace tfm {
namespace {

using cuda_column_sums::ColumnOutputs;
using cuda_column_sums::LaunchColumnSums;
using cuda_column_sums::LaunchColumnTotals;
using cuda_column_sums::NumChunks;
using cuda_elementwise::Aligned16;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::LastError;
using cuda_elementwise::MultiprocessorCount;
using cuda_elementwise::ResidentBlocksPerMultiprocessor;
using cuda_elementwise::ToFloat;
using cuda_row_reduce::ForRowWidth;
using cuda_row_reduce::GroupReduce;
using cuda_row_reduce::GroupScratch;
using cuda_row_reduce::kMaxWarpRow;
using cuda_row_reduce::kWarp;
using cuda_row_reduce::RowBlocks;
using cuda_row_reduce::Sum;

constexpr int kThreads = cuda_row_reduce::kRowThreads;

// Whether the row kernels take the problems they can (the default);
// TFM_LAYER_NORM_FUSED=0 sends every problem to the general kernels, so
// that the two can be timed on one GPU. Read once.
bool RowKernelsOn() {
  static const bool on = EnvOnUnlessZero("TFM_LAYER_NORM_FUSED");
  return on;
}

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

// Quad `quad` of p (p aligned for quads).
template <typename D>
__device__ __forceinline__ Quad<D> QuadAt(const D* p, int64_t quad) {
  return reinterpret_cast<const Quad<D>*>(p)[quad];
}

template <typename D>
__device__ __forceinline__ void StoreQuadAt(D* p, int64_t quad, const Quad<D>& q) {
  reinterpret_cast<Quad<D>*>(p)[quad] = q;
}

// v[l] = p[4 block + l] as f32 for the elements in [begin, end), 0 for the
// others; one vector access when the block is whole and `quads` says the
// tensors are aligned for it.
template <typename D>
__device__ __forceinline__ void LoadQuad(const D* p, int64_t block, int64_t begin, int64_t end,
                                         bool quads, float (&v)[4]) {
  if (quads && end - begin == 4) {
    const Quad<D> q = QuadAt(p, block);
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
    StoreQuadAt(p, block, q);
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
__device__ __forceinline__ float Dropped(const ResidualDropoutLaunch& dropout, bool keep, float v) {
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

// The row kernels' helpers. Quad j of lane `lane` of a row of kWidth lanes
// that starts a Philox block: the block ForLaneBlocks deals it.
template <int kWidth>
__device__ __forceinline__ int LaneQuad(int lane, int j) {
  return lane + kWidth * j;
}

// The forward with a warp per row (d <= 4 * kWarp * kQuads, at most
// kMaxWarpRow): the same arithmetic in the same order as
// ResidualLayerNormKernel<kWarp>, with the row's sum kept in registers
// between the three passes (it was read back twice) and gain and bias
// loaded as quads. The row loop depends on the warp only, so a row's
// reductions see all of its lanes.
template <int kQuads, typename D>
__global__ void __launch_bounds__(kThreads)
    ResidualLayerNormWarpKernel(const D* __restrict__ x, const D* __restrict__ h,
                                const D* __restrict__ h_bias, const D* __restrict__ gain,
                                const D* __restrict__ bias, int64_t rows, int64_t d, float eps,
                                ResidualDropoutLaunch dropout, D* __restrict__ out,
                                D* __restrict__ sum, float* __restrict__ mean,
                                float* __restrict__ rstd) {
  constexpr int kGroups = kThreads / kWarp;
  const int lane = threadIdx.x % kWarp;
  const int row_quads = static_cast<int>(d / 4);
  const float inv_d = 1.0f / static_cast<float>(d);
  GroupScratch<float>* const no_scratch = nullptr;  // A warp reduces by shuffles alone.
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kGroups + threadIdx.x / kWarp; row < rows;
       row += static_cast<int64_t>(gridDim.x) * kGroups) {
    const int64_t first = row * row_quads;  // The row's first quad.
    // Every load of the row is issued before the first use.
    Quad<D> xq[kQuads], hq[kQuads];
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = LaneQuad<kWarp>(lane, j);
      if (q >= row_quads) continue;
      xq[j] = QuadAt(x, first + q);
      hq[j] = QuadAt(h, first + q);
    }
    float s[kQuads][4];
    float total = 0.0f;
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = LaneQuad<kWarp>(lane, j);
      if (q >= row_quads) continue;
      bool keep[4];
      KeepBits(dropout, first + q, keep);
      Quad<D> hb{}, stored;
      if (h_bias != nullptr) hb = QuadAt(h_bias, q);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const float hv = ToFloat(hq[j].v[l]);
        const float v = h_bias != nullptr ? hv + ToFloat(hb.v[l]) : hv;
        // Rounded as stored: the statistics are of the sum backward reads.
        stored.v[l] = FromFloat<D>(ToFloat(xq[j].v[l]) + Dropped(dropout, keep[l], v));
        s[j][l] = ToFloat(stored.v[l]);
        total += s[j][l];
      }
      StoreQuadAt(sum, first + q, stored);
    }
    const float mu = GroupReduce<kWarp>(total, Sum(), no_scratch) * inv_d;
    float squares = 0.0f;
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      if (LaneQuad<kWarp>(lane, j) >= row_quads) continue;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        const float deviation = s[j][l] - mu;
        squares = fmaf(deviation, deviation, squares);
      }
    }
    const float var = GroupReduce<kWarp>(squares, Sum(), no_scratch) * inv_d;
    const float rs = 1.0f / sqrtf(var + eps);
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = LaneQuad<kWarp>(lane, j);
      if (q >= row_quads) continue;
      const Quad<D> g = QuadAt(gain, q), b = QuadAt(bias, q);
      Quad<D> y;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        y.v[l] = FromFloat<D>(fmaf((s[j][l] - mu) * rs, ToFloat(g.v[l]), ToFloat(b.v[l])));
      }
      StoreQuadAt(out, first + q, y);
    }
    if (lane == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

// One row of the backward as loaded: the lane's quads of dout and sum and
// the row's statistics.
template <typename D, int kQuads>
struct BackwardRow {
  Quad<D> dy[kQuads];
  Quad<D> s[kQuads];
  float mu;
  float rs;
};

template <int kWidth, int kQuads, typename D>
__device__ __forceinline__ BackwardRow<D, kQuads> LoadBackwardRow(
    const D* __restrict__ dout, const D* __restrict__ sum, const float* __restrict__ mean,
    const float* __restrict__ rstd, int64_t row, int row_quads, int lane) {
  BackwardRow<D, kQuads> r;
  const int64_t first = row * row_quads;
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    const int q = LaneQuad<kWidth>(lane, j);
    if (q >= row_quads) continue;
    r.dy[j] = QuadAt(dout, first + q);
    r.s[j] = QuadAt(sum, first + q);
  }
  r.mu = mean[row];
  r.rs = rstd[row];
  return r;
}

// Sums k < kSums of one lane's columns: [quad j][sum k][element l].
template <int kQuads, int kSums>
using ColumnAccumulators = float[kQuads][kSums][4];

// dx and dh of one row, as ResidualLayerNormDxKernel<kWidth> computes them
// (the same formulas, lanes and order of operations), and the row's terms
// of the lane's columns added into acc: dgain by FMA of dout and xhat and
// dbias by dout, as ColumnTerms; dh_bias (kSums = 3) by dh as stored.
template <int kWidth, int kQuads, int kSums, typename D>
__device__ __forceinline__ void BackwardRowStep(
    const BackwardRow<D, kQuads>& r, const Quad<D> (&gain)[kQuads], int64_t row, int row_quads,
    int lane, float inv_d, const ResidualDropoutLaunch& dropout, GroupScratch<float>* scratch,
    D* __restrict__ dx, D* __restrict__ dh, ColumnAccumulators<kQuads, kSums>& acc) {
  float sum_g = 0.0f, sum_gx = 0.0f;
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    if (LaneQuad<kWidth>(lane, j) >= row_quads) continue;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const float g = ToFloat(r.dy[j].v[l]) * ToFloat(gain[j].v[l]);
      sum_g += g;
      sum_gx = fmaf(g, ToFloat(r.s[j].v[l]) - r.mu, sum_gx);
    }
  }
  const float mean_g = GroupReduce<kWidth>(sum_g, Sum(), scratch) * inv_d;
  const float mean_gx = GroupReduce<kWidth>(sum_gx, Sum(), scratch) * r.rs * inv_d;
  const int64_t first = row * row_quads;
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    const int q = LaneQuad<kWidth>(lane, j);
    if (q >= row_quads) continue;
    bool keep[4];
    KeepBits(dropout, first + q, keep);
    Quad<D> dxq, dhq;
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const float dy = ToFloat(r.dy[j].v[l]);
      const float xhat = (ToFloat(r.s[j].v[l]) - r.mu) * r.rs;
      const float g = dy * ToFloat(gain[j].v[l]);
      const float dxv = r.rs * ((g - mean_g) - xhat * mean_gx);
      dxq.v[l] = FromFloat<D>(dxv);
      dhq.v[l] = FromFloat<D>(Dropped(dropout, keep[l], dxv));
      acc[j][0][l] = fmaf(dy, xhat, acc[j][0][l]);
      acc[j][1][l] += dy;
      if constexpr (kSums == 3) acc[j][2][l] += ToFloat(dhq.v[l]);
    }
    StoreQuadAt(dx, first + q, dxq);
    StoreQuadAt(dh, first + q, dhq);
  }
}

// chunk[k * d + column] = the block's sums k of the column, d = 4 *
// row_quads. With one row group the lanes' columns are disjoint and go
// straight out; with several (a warp per row) they are added in shared
// memory warp by warp in index order, a fixed order. Every thread of the
// block must call it.
template <int kWidth, int kQuads, int kSums>
__device__ __forceinline__ void StoreChunkSums(const ColumnAccumulators<kQuads, kSums>& acc,
                                               int lane, int row_quads, float* __restrict__ chunk) {
  constexpr int kGroups = kThreads / kWidth;
  float4* chunk4 = reinterpret_cast<float4*>(chunk);
  auto quad = [&](int j, int k) {
    return make_float4(acc[j][k][0], acc[j][k][1], acc[j][k][2], acc[j][k][3]);
  };
  if constexpr (kGroups == 1) {
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int q = LaneQuad<kWidth>(lane, j);
      if (q >= row_quads) continue;
#pragma unroll
      for (int k = 0; k < kSums; ++k) chunk4[k * row_quads + q] = quad(j, k);
    }
  } else {
    __shared__ float4 columns[kSums][kWidth * kQuads];
    const int group = threadIdx.x / kWidth;
    for (int turn = 0; turn < kGroups; ++turn) {
      if (group == turn) {
#pragma unroll
        for (int j = 0; j < kQuads; ++j) {
          const int q = LaneQuad<kWidth>(lane, j);
          if (q >= row_quads) continue;
#pragma unroll
          for (int k = 0; k < kSums; ++k) {
            float4 v = quad(j, k);
            if (turn > 0) {
              const float4 before = columns[k][q];
              v = make_float4(before.x + v.x, before.y + v.y, before.z + v.z, before.w + v.w);
            }
            columns[k][q] = v;
          }
        }
      }
      __syncthreads();
    }
    for (int i = threadIdx.x; i < kSums * row_quads; i += kThreads) {
      chunk4[i] = columns[i / row_quads][i % row_quads];
    }
  }
}

// Blocks per multiprocessor that ResidualLayerNormBackwardRowKernel's
// register cap aims at: a lane's column sums (12 floats a quad) decide it.
// Without a minimum, ptxas caps some layouts at a few registers fewer than
// they need and spills.
constexpr int BackwardRowBlocksPerSm(int quads) { return quads == 1 ? 4 : quads == 2 ? 2 : 1; }

// Rows a lane of ResidualLayerNormBackwardRowKernel loads ahead of the one
// it reduces, so that their loads are in flight meanwhile. From 2 quads a
// lane on, the column sums leave 1 or 2 blocks a multiprocessor, so 16-bit
// rows of 2 to 4 quads a lane load two rows ahead; 16-bit rows of 8 quads
// and f32 rows up to 4 one (within the registers), as do rows of 1 quad
// (two spill under their 4-blocks cap); f32 rows of 8 quads none (a second
// copy would not fit).
template <typename D, int kQuads>
constexpr int kBackwardRowsAhead = sizeof(D) == 2 && kQuads >= 2 && kQuads <= 4 ? 2
                                   : sizeof(D) * kQuads <= 16                   ? 1
                                                                                : 0;

// The backward of the rows of chunk blockIdx.x (chunk_rows each), each row's
// dout and sum read once: dx and dh, and partial[blockIdx.x][k][column] =
// the chunk's column sums k < kSums (dgain, dbias, dh_bias) for
// ColumnTotalsKernel. kWidth lanes per row, kThreads / kWidth rows at a
// time, each lane holding kQuads quads of the row and their column sums in
// registers, and the quads of the next kBackwardRowsAhead rows.
template <int kWidth, int kQuads, int kSums, typename D>
__global__ void __launch_bounds__(kThreads, BackwardRowBlocksPerSm(kQuads))
    ResidualLayerNormBackwardRowKernel(const D* __restrict__ dout, const D* __restrict__ sum,
                                       const D* __restrict__ gain, const float* __restrict__ mean,
                                       const float* __restrict__ rstd, int64_t rows, int64_t d,
                                       int64_t chunk_rows, ResidualDropoutLaunch dropout,
                                       D* __restrict__ dx, D* __restrict__ dh,
                                       float* __restrict__ partial) {
  __shared__ GroupScratch<float> scratch;
  constexpr int kGroups = kThreads / kWidth;
  constexpr int kDepth = kBackwardRowsAhead<D, kQuads>;
  const int group = threadIdx.x / kWidth, lane = threadIdx.x % kWidth;
  const int row_quads = static_cast<int>(d / 4);
  const float inv_d = 1.0f / static_cast<float>(d);
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  Quad<D> g[kQuads];
#pragma unroll
  for (int j = 0; j < kQuads; ++j) {
    const int q = LaneQuad<kWidth>(lane, j);
    if (q < row_quads) g[j] = QuadAt(gain, q);
  }
  ColumnAccumulators<kQuads, kSums> acc = {};
  // Row `row`, or past the chunk's end its last row (loaded again, from
  // cache, rather than branched around).
  auto load = [&](int64_t row) {
    return LoadBackwardRow<kWidth, kQuads>(dout, sum, mean, rstd, row < end ? row : end - 1,
                                           row_quads, lane);
  };
  auto step = [&](const BackwardRow<D, kQuads>& loaded, int64_t row) {
    BackwardRowStep<kWidth, kQuads, kSums>(loaded, g, row, row_quads, lane, inv_d, dropout,
                                           &scratch, dx, dh, acc);
  };
  if constexpr (kDepth == 0) {
    for (int64_t row = begin + group; row < end; row += kGroups) step(load(row), row);
  } else {
    // A ring of kDepth rows, indexed by constants: the row loop is unrolled
    // kDepth times.
    BackwardRow<D, kQuads> ahead[kDepth];
#pragma unroll
    for (int k = 0; k < kDepth; ++k) ahead[k] = load(begin + group + k * kGroups);
    for (int64_t row = begin + group; row < end; row += kDepth * kGroups) {
#pragma unroll
      for (int k = 0; k < kDepth; ++k) {
        const int64_t r = row + k * kGroups;
        if (r >= end) break;
        const BackwardRow<D, kQuads> current = ahead[k];
        ahead[k] = load(r + kDepth * kGroups);
        step(current, r);
      }
    }
  }
  StoreChunkSums<kWidth, kQuads, kSums>(acc, lane, row_quads,
                                        partial + static_cast<int64_t>(blockIdx.x) * kSums * d);
}

// Whether every pointer is aligned for Quad<D> accesses.
template <typename D>
bool QuadAligned(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers) {
    if (reinterpret_cast<uintptr_t>(p) % sizeof(Quad<D>) != 0) return false;
  }
  return true;
}

// Lanes per row and quads per lane of a row kernel.
template <int kLanes, int kLaneQuads>
struct RowLayout {
  static constexpr int kWidth = kLanes;
  static constexpr int kQuads = kLaneQuads;
};

// The longest rows of the row kernels: the forward's a warp's (8 quads a
// lane); the backward's a block's with 4 quads a lane (12 column sums per
// quad in registers: longer rows would spill them).
constexpr int64_t kMaxForwardRow = kMaxWarpRow;
constexpr int64_t kMaxBackwardRow = 4 * 4 * kThreads;

// Calls launch(RowLayout<kWarp, kQuads>()) with the fewest quads a lane
// (1, 2, 4 or 8) that hold a row of row_quads <= kMaxWarpRow / 4 quads:
// shorter rows keep fewer registers.
template <typename Launch>
void ForWarpLayout(int64_t row_quads, Launch launch) {
  static_assert(kMaxWarpRow == 4 * 8 * kWarp, "8 quads a lane hold a warp's longest row");
  if (row_quads <= kWarp) {
    launch(RowLayout<kWarp, 1>());
  } else if (row_quads <= 2 * kWarp) {
    launch(RowLayout<kWarp, 2>());
  } else if (row_quads <= 4 * kWarp) {
    launch(RowLayout<kWarp, 4>());
  } else {
    launch(RowLayout<kWarp, 8>());
  }
}

// As ForWarpLayout, and for the backward's longer rows (row_quads <=
// kMaxBackwardRow / 4) the block per row, as ForRowWidth.
template <typename Launch>
void ForBackwardLayout(int64_t row_quads, Launch launch) {
  if (row_quads <= kMaxWarpRow / 4) {
    ForWarpLayout(row_quads, launch);
  } else if (row_quads <= 2 * kThreads) {
    launch(RowLayout<kThreads, 2>());
  } else {
    launch(RowLayout<kThreads, 4>());
  }
}

// Whether the row kernels take rows of d elements: rows that start Philox
// blocks (d a multiple of 4) up to max_d long, with the tensors aligned.
bool RowKernelsTake(int64_t d, int64_t max_d, bool aligned) {
  return aligned && d % 4 == 0 && d <= max_d && RowKernelsOn();
}

// The row kernel's chunks: about cuda_column_sums' 128 rows, at least
// kMinBackwardChunkRows (a block's column sums cost a pass through shared
// memory per chunk), at most its 1,024.
constexpr int64_t kMinBackwardChunkRows = 16;
RowChunks BackwardRowChunks(int64_t rows, int64_t resident_blocks) {
  return ChunksInWholeWaves(rows, resident_blocks, cuda_column_sums::kMinChunkRows,
                            kMinBackwardChunkRows, cuda_column_sums::kMaxChunks);
}

// The backward through ResidualLayerNormBackwardRowKernel, then
// ColumnTotalsKernel over its chunks (LaunchColumnSums' second level).
template <int kSums, typename D>
const char* LaunchBackwardRowKernels(const D* dout, const D* sum, const D* gain, const float* mean,
                                     const float* rstd, int64_t rows, int64_t d,
                                     const ResidualDropoutLaunch& dropout, D* dx, D* dh,
                                     float* workspace, const ColumnOutputs<D>& totals,
                                     cudaStream_t stream) {
  RowChunks chunks;
  ForBackwardLayout(d / 4, [&](auto layout) {
    using Layout = decltype(layout);
    constexpr auto kKernel =
        ResidualLayerNormBackwardRowKernel<Layout::kWidth, Layout::kQuads, kSums, D>;
    chunks = BackwardRowChunks(
        rows, static_cast<int64_t>(MultiprocessorCount()) *
                  ResidentBlocksPerMultiprocessor<kKernel, kThreads>());
    kKernel<<<static_cast<unsigned>(chunks.count), kThreads, 0, stream>>>(
        dout, sum, gain, mean, rstd, rows, d, chunks.rows_per_chunk, dropout, dx, dh, workspace);
  });
  if (const char* error = LastError()) return error;
  return LaunchColumnTotals<kSums>(workspace, chunks.count, d, totals, stream);
}

}  // namespace

template <typename T>
const char* LaunchResidualLayerNorm(const T* x, const T* h, const T* h_bias, const T* gain,
                                    const T* bias, int64_t rows, int64_t d, float eps,
                                    const ResidualDropoutLaunch& dropout, T* out, T* sum,
                                    float* mean, float* rstd, StreamHandle stream) {
  if (rows == 0) return nullptr;
  using D = DeviceT<T>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (RowKernelsTake(d, kMaxForwardRow, QuadAligned<D>({x, h, h_bias, gain, bias, out, sum}))) {
    ForWarpLayout(d / 4, [&](auto layout) {
      ResidualLayerNormWarpKernel<decltype(layout)::kQuads, D>
          <<<RowBlocks<kWarp>(rows), kThreads, 0, s>>>(
              reinterpret_cast<const D*>(x), reinterpret_cast<const D*>(h),
              reinterpret_cast<const D*>(h_bias), reinterpret_cast<const D*>(gain),
              reinterpret_cast<const D*>(bias), rows, d, eps, dropout, reinterpret_cast<D*>(out),
              reinterpret_cast<D*>(sum), mean, rstd);
    });
    return LastError();
  }
  const bool quads = QuadAligned<D>({x, h, out, sum});
  ForRowWidth(d, [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    ResidualLayerNormKernel<kWidth, D><<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(
        reinterpret_cast<const D*>(x), reinterpret_cast<const D*>(h),
        reinterpret_cast<const D*>(h_bias), reinterpret_cast<const D*>(gain),
        reinterpret_cast<const D*>(bias), rows, d, eps, dropout, quads, reinterpret_cast<D*>(out),
        reinterpret_cast<D*>(sum), mean, rstd);
  });
  return LastError();
}

// The general backward writes NumChunks(rows) chunks of 2 or 3 sums, the
// row kernel BackwardRowChunks' count, at most MostChunksInWholeWaves.
int64_t ResidualLayerNormBackwardWorkspaceFloats(int64_t rows, int64_t d) {
  const int64_t chunks = std::max(
      NumChunks(rows),
      MostChunksInWholeWaves(rows, kMinBackwardChunkRows, cuda_column_sums::kMaxChunks));
  return chunks * 3 * d;
}

template <typename T>
const char* LaunchResidualLayerNormBackward(const T* dout, const T* sum, const T* gain,
                                            const float* mean, const float* rstd, int64_t rows,
                                            int64_t d, const ResidualDropoutLaunch& dropout, T* dx,
                                            T* dh, T* dgain, T* dbias, T* dh_bias, float* workspace,
                                            StreamHandle stream) {
  using D = DeviceT<T>;
  const auto* dyd = reinterpret_cast<const D*>(dout);
  const auto* sd = reinterpret_cast<const D*>(sum);
  const auto* gd = reinterpret_cast<const D*>(gain);
  auto* dxd = reinterpret_cast<D*>(dx);
  auto* dhd = reinterpret_cast<D*>(dh);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const ColumnOutputs<D> totals{
      {reinterpret_cast<D*>(dgain), reinterpret_cast<D*>(dbias), reinterpret_cast<D*>(dh_bias)}};
  if (rows > 0 &&
      RowKernelsTake(d, kMaxBackwardRow,
                     QuadAligned<D>({dout, sum, gain, dx, dh}) && Aligned16(workspace))) {
    return dh_bias == nullptr
               ? LaunchBackwardRowKernels<2>(dyd, sd, gd, mean, rstd, rows, d, dropout, dxd, dhd,
                                             workspace, totals, s)
               : LaunchBackwardRowKernels<3>(dyd, sd, gd, mean, rstd, rows, d, dropout, dxd, dhd,
                                             workspace, totals, s);
  }
  if (rows > 0) {
    const bool quads = QuadAligned<D>({dout, sum, dx, dh});
    ForRowWidth(d, [&](auto width) {
      constexpr int kWidth = decltype(width)::value;
      ResidualLayerNormDxKernel<kWidth, D><<<RowBlocks<kWidth>(rows), kThreads, 0, s>>>(
          dyd, sd, gd, mean, rstd, rows, d, dropout, quads, dxd, dhd);
    });
    if (const char* error = LastError()) return error;
  }
  if (dh_bias == nullptr) {
    return LaunchColumnSums<2>(ColumnTerms<D, 2>{dyd, sd, dhd, mean, rstd, d}, rows, d, workspace,
                               totals, s);
  }
  return LaunchColumnSums<3>(ColumnTerms<D, 3>{dyd, sd, dhd, mean, rstd, d}, rows, d, workspace,
                             totals, s);
}

#define TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(T)                               \
  template const char* LaunchResidualLayerNorm<T>(                                \
      const T*, const T*, const T*, const T*, const T*, int64_t, int64_t, float,  \
      const ResidualDropoutLaunch&, T*, T*, float*, float*, StreamHandle);        \
  template const char* LaunchResidualLayerNormBackward<T>(                        \
      const T*, const T*, const T*, const float*, const float*, int64_t, int64_t, \
      const ResidualDropoutLaunch&, T*, T*, T*, T*, T*, float*, StreamHandle)
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(float);
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(Half);
TFM_INSTANTIATE_RESIDUAL_LAYER_NORM_CUDA(BFloat16);

}  // namespace tfm
