// CUDA kernel of row_top_k: one block per row. Each thread keeps the best
// kKeep >= count of its strided share of the row, sorted, in registers: the
// array is indexed only by unrolled loops (a run-time index would put it in
// local memory, as the first version did: 1.1 ms for 2000 x 32000 on an
// H200, 17 times the read's floor), and a new entry bubbles down it by
// compare-and-swap. Then `count` rounds of a block-wide arg-best over the
// threads' heads pick the row's best in order; the winner's thread shifts
// its array up. The comparison is the CPU kernel's (value descending, column
// ascending), and no arithmetic touches the values, so both devices return
// the same bits.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_elementwise.cuh"
#include "ops/row_top_k/row_top_k_cuda.h"

namespace tfm {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
// row_top_k.h's kMaxRowTopK (validation keeps count within it).
constexpr int kMaxCount = 64;
constexpr int kNoColumn = 0x7fffffff;  // Worse than any column on ties.

struct Entry {
  float value;
  int column;
};

__device__ __forceinline__ bool Better(Entry a, Entry b) {
  if (a.value != b.value) return a.value > b.value;
  return a.column < b.column;
}

__device__ __forceinline__ Entry BestOfWarp(Entry e) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    Entry other{__shfl_xor_sync(0xffffffffu, e.value, offset),
                __shfl_xor_sync(0xffffffffu, e.column, offset)};
    if (Better(other, e)) e = other;
  }
  return e;
}

// Offers entry (v, column) to a thread's sorted best-kKeep.
template <int kKeep>
__device__ __forceinline__ void Offer(Entry (&best)[kKeep], float v, int64_t column,
                                      int64_t forbidden) {
  // As on the CPU: NaN and -infinity are skipped.
  if (!(v > -INFINITY) || column == forbidden) return;
  Entry e{v, static_cast<int>(column)};
  if (!Better(e, best[kKeep - 1])) return;
#pragma unroll
  for (int i = 0; i < kKeep; ++i) {
    if (Better(e, best[i])) {
      const Entry t = best[i];
      best[i] = e;
      e = t;
    }
  }
}

template <int kKeep>
__global__ void RowTopKKernel(const float* x, int64_t n, int count, int64_t forbidden,
                              float* values, int32_t* columns) {
  const int64_t row = blockIdx.x;
  const float* in = x + row * n;
  const Entry kNone{-INFINITY, kNoColumn};
  Entry best[kKeep];
#pragma unroll
  for (int i = 0; i < kKeep; ++i) best[i] = kNone;
  // Four loads in flight before the first compare.
  constexpr int kLoads = 4;
  int64_t column = threadIdx.x;
  for (; column + (kLoads - 1) * kThreads < n; column += kLoads * kThreads) {
    float v[kLoads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) v[j] = in[column + j * kThreads];
#pragma unroll
    for (int j = 0; j < kLoads; ++j) Offer(best, v[j], column + j * kThreads, forbidden);
  }
  for (; column < n; column += kThreads) Offer(best, in[column], column, forbidden);

  __shared__ Entry warp_best[kThreads / kWarp];
  __shared__ Entry winner;
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int k = 0; k < count; ++k) {
    Entry e = BestOfWarp(best[0]);
    if (lane == 0) warp_best[warp] = e;
    __syncthreads();
    if (warp == 0) {
      e = lane < kThreads / kWarp ? warp_best[lane] : kNone;
      e = BestOfWarp(e);
      if (lane == 0) winner = e;
    }
    __syncthreads();
    const Entry w = winner;
    const bool valid = w.column != kNoColumn;
    // Columns are unique, so exactly one thread owns a valid winner.
    if (valid && w.column == best[0].column) {
#pragma unroll
      for (int i = 0; i + 1 < kKeep; ++i) best[i] = best[i + 1];
      best[kKeep - 1] = kNone;
    }
    if (threadIdx.x == 0) {
      values[row * count + k] = valid ? w.value : -INFINITY;
      columns[row * count + k] = valid ? w.column : -1;
    }
    __syncthreads();  // `winner` and `warp_best` are rewritten next round.
  }
}

template <int kKeep>
void Launch(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden, float* values,
            int32_t* columns, StreamHandle stream) {
  RowTopKKernel<kKeep><<<static_cast<unsigned>(rows), kThreads, 0,
                         static_cast<cudaStream_t>(stream)>>>(x, n, count, forbidden, values,
                                                              columns);
}

// Launch with the fewest kept entries of kKeep, kMore... that hold `count`
// (the last holds every count): 2 beam + 1 for beams 1, 2, 4, 6, 8, 12, 16
// and 24 (a search ranks one more than it keeps).
template <int kKeep, int... kMore>
void LaunchFitting(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden,
                   float* values, int32_t* columns, StreamHandle stream) {
  if constexpr (sizeof...(kMore) == 0) {
    Launch<kKeep>(x, rows, n, count, forbidden, values, columns, stream);
  } else if (count <= kKeep) {
    Launch<kKeep>(x, rows, n, count, forbidden, values, columns, stream);
  } else {
    LaunchFitting<kMore...>(x, rows, n, count, forbidden, values, columns, stream);
  }
}

}  // namespace

const char* LaunchRowTopK(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden,
                          float* values, int32_t* columns, StreamHandle stream) {
  if (count < 1 || count > kMaxCount) return "row_top_k: count outside [1, 64]";
  if (rows == 0) return nullptr;
  if (rows > 0x7fffffff) return "row_top_k: more rows than a CUDA grid holds";
  LaunchFitting<1, 3, 5, 9, 13, 17, 25, 33, 49, kMaxCount>(x, rows, n, count, forbidden, values,
                                                           columns, stream);
  return cuda_elementwise::LastError();
}

}  // namespace tfm
