// CUDA kernel of row_top_k: one block per row. Each thread keeps the best
// kKeep >= count of its strided share of the row, sorted, in registers: the
// array is indexed only by unrolled loops (a run-time index would put it in
// local memory, as the first version did: 1.1 ms for 2000 x 32000 on an
// H200, 17 times the read's floor), and a new entry bubbles down it by
// compare-and-swap. Then `count` rounds of a block-wide arg-best over the
// threads' heads pick the row's best in order; the winner's thread shifts
// its array up. The comparison is the CPU kernel's (value descending, column
// ascending), and no arithmetic touches the values, so both devices return
// the same bits. The columns a row's filter excludes (the forbidden one, and
// with allowed bits those whose bit is clear: column_filter.h) never enter.
//
// log_softmax_top_k runs the same kernel on each row's log-probabilities,
// computed on the fly as LogSoftmaxKernel computes them
// (ops/softmax/softmax_cuda.cu: the same group width for the row's length,
// the same per-thread order and reductions, the same expression), so its
// values are log_softmax's to the bit and nothing of the row's size is
// written: three reads of the logits instead of log_softmax's three reads
// and a write, and row_top_k's read.
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"
#include "ops/row_top_k/column_filter.h"
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
                                      const ColumnFilter& filter) {
  // As on the CPU: NaN and -infinity are skipped. The filter last: most
  // entries lose to the thread's worst kept one, and need no bit read.
  if (!(v > -INFINITY)) return;
  Entry e{v, static_cast<int>(column)};
  if (!Better(e, best[kKeep - 1]) || filter.Excludes(column)) return;
#pragma unroll
  for (int i = 0; i < kKeep; ++i) {
    if (Better(e, best[i])) {
      const Entry t = best[i];
      best[i] = e;
      e = t;
    }
  }
}

// A row's log-softmax shift, max and log of the sum of exponentials, as
// LogSoftmaxKernel<kWidth> computes them for a row its group of kWidth
// threads holds: here every group of the block computes the whole row (for
// kWidth = 32, each warp alike), so every thread gets the same two floats.
template <int kWidth>
__device__ __forceinline__ void LogSoftmaxShift(const float* in, int64_t n, float* max,
                                                float* log_sum) {
  using cuda_row_reduce::GroupReduce;
  __shared__ cuda_row_reduce::GroupScratch<float> scratch;
  const int lane = threadIdx.x % kWidth;
  float m = -INFINITY;
  for (int64_t i = lane; i < n; i += kWidth) m = cuda_row_reduce::MaxOrNaN()(m, in[i]);
  m = GroupReduce<kWidth>(m, cuda_row_reduce::MaxOrNaN(), &scratch);
  float l = 0.0f;
  if (m != -INFINITY && isfinite(m)) {  // The same in the whole block.
    float sum = 0.0f;
    for (int64_t i = lane; i < n; i += kWidth) sum += expf(in[i] - m);
    l = logf(GroupReduce<kWidth>(sum, cuda_row_reduce::Sum(), &scratch));
  }
  *max = m;
  *log_sum = l;
}

// kSoftmaxWidth 0: row_top_k of x. Otherwise log_softmax_top_k, the shift
// computed with LogSoftmaxKernel's group width for rows of length n.
template <int kKeep, int kSoftmaxWidth>
__global__ void RowTopKKernel(const float* x, int64_t n, int count, int64_t forbidden,
                              const uint32_t* allowed, float* values, int32_t* columns) {
  const int64_t row = blockIdx.x;
  const float* in = x + row * n;
  const ColumnFilter filter = ColumnFilter::OfRow(forbidden, allowed, n, row);
  const Entry kNone{-INFINITY, kNoColumn};
  Entry best[kKeep];
#pragma unroll
  for (int i = 0; i < kKeep; ++i) best[i] = kNone;
  float max = 0.0f, log_sum = 0.0f;
  bool scan = true;
  if constexpr (kSoftmaxWidth > 0) {
    LogSoftmaxShift<kSoftmaxWidth>(in, n, &max, &log_sum);
    // A row of -infinity only: log_softmax's row is -infinity, nothing to rank.
    scan = max != -INFINITY;
  }
  // The value ranked: the entry, or its log-probability as log_softmax
  // writes it.
  const auto value = [&](float v) {
    if constexpr (kSoftmaxWidth > 0) {
      return (v - max) - log_sum;
    } else {
      return v;
    }
  };
  // Four loads in flight before the first compare.
  constexpr int kLoads = 4;
  int64_t column = threadIdx.x;
  if (scan) {
    for (; column + (kLoads - 1) * kThreads < n; column += kLoads * kThreads) {
      float v[kLoads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) v[j] = in[column + j * kThreads];
#pragma unroll
      for (int j = 0; j < kLoads; ++j) Offer(best, value(v[j]), column + j * kThreads, filter);
    }
    for (; column < n; column += kThreads) Offer(best, value(in[column]), column, filter);
  }

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

// What every launch passes on.
struct TopKCall {
  const float* x;
  int64_t rows, n;
  int count;
  int64_t forbidden;
  const uint32_t* allowed;
  float* values;
  int32_t* columns;
  cudaStream_t stream;
};

template <int kKeep>
void Launch(bool log_softmax, const TopKCall& c) {
  const unsigned blocks = static_cast<unsigned>(c.rows);
  if (!log_softmax) {
    RowTopKKernel<kKeep, 0><<<blocks, kThreads, 0, c.stream>>>(
        c.x, c.n, c.count, c.forbidden, c.allowed, c.values, c.columns);
    return;
  }
  static_assert(kThreads == cuda_row_reduce::kRowThreads,
                "the block must be LogSoftmaxKernel's for its wide rows' reductions");
  cuda_row_reduce::ForRowWidth(c.n, [&](auto width) {
    RowTopKKernel<kKeep, decltype(width)::value><<<blocks, kThreads, 0, c.stream>>>(
        c.x, c.n, c.count, c.forbidden, c.allowed, c.values, c.columns);
  });
}

// Launch with the fewest kept entries of kKeep, kMore... that hold `count`
// (the last holds every count): 2 beam + 1 for beams 1, 2, 4, 6, 8, 12, 16
// and 24 (a search ranks one more than it keeps).
template <int kKeep, int... kMore>
void LaunchFitting(bool log_softmax, const TopKCall& c) {
  if constexpr (sizeof...(kMore) == 0) {
    Launch<kKeep>(log_softmax, c);
  } else if (c.count <= kKeep) {
    Launch<kKeep>(log_softmax, c);
  } else {
    LaunchFitting<kMore...>(log_softmax, c);
  }
}

const char* LaunchTopK(bool log_softmax, const TopKCall& c) {
  if (c.count < 1 || c.count > kMaxCount) return "row_top_k: count outside [1, 64]";
  if (c.rows == 0) return nullptr;
  if (c.rows > 0x7fffffff) return "row_top_k: more rows than a CUDA grid holds";
  LaunchFitting<1, 3, 5, 9, 13, 17, 25, 33, 49, kMaxCount>(log_softmax, c);
  return cuda_elementwise::LastError();
}

}  // namespace

const char* LaunchRowTopK(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden,
                          const uint32_t* allowed, float* values, int32_t* columns,
                          StreamHandle stream) {
  return LaunchTopK(false, {x, rows, n, count, forbidden, allowed, values, columns,
                            static_cast<cudaStream_t>(stream)});
}

const char* LaunchLogSoftmaxTopK(const float* x, int64_t rows, int64_t n, int count,
                                 int64_t forbidden, const uint32_t* allowed, float* values,
                                 int32_t* columns, StreamHandle stream) {
  return LaunchTopK(true, {x, rows, n, count, forbidden, allowed, values, columns,
                           static_cast<cudaStream_t>(stream)});
}

}  // namespace tfm
