// CUDA kernel of row_top_k: one block per row. Each thread keeps the best
// `count` of its strided share of the row in a sorted local array (one
// compare per entry once it is full), then `count` rounds of a block-wide
// arg-best over the threads' heads pick the row's best in order. The
// comparison is the CPU kernel's (value descending, column ascending), and
// no arithmetic touches the values, so both devices return the same bits.
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

__global__ void RowTopKKernel(const float* x, int64_t n, int count, int64_t forbidden,
                              float* values, int32_t* columns) {
  const int64_t row = blockIdx.x;
  const float* in = x + row * n;
  const float kNone = -INFINITY;
  Entry best[kMaxCount];
  int kept = 0;
  for (int64_t column = threadIdx.x; column < n; column += kThreads) {
    const float v = in[column];
    // As on the CPU: NaN and -infinity are skipped, and a thread's columns
    // ascend, so an equal value loses to the one it already kept.
    if (!(v > kNone) || (kept == count && !(v > best[count - 1].value)) || column == forbidden) {
      continue;
    }
    int slot = kept < count ? kept++ : count - 1;
    for (; slot > 0 && v > best[slot - 1].value; --slot) best[slot] = best[slot - 1];
    best[slot] = Entry{v, static_cast<int>(column)};
  }
  __shared__ Entry warp_best[kThreads / kWarp];
  __shared__ Entry winner;
  int head = 0;  // This thread's next candidate.
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (int k = 0; k < count; ++k) {
    const Entry mine = head < kept ? best[head] : Entry{kNone, kNoColumn};
    Entry e = BestOfWarp(mine);
    if (lane == 0) warp_best[warp] = e;
    __syncthreads();
    if (warp == 0) {
      e = lane < kThreads / kWarp ? warp_best[lane] : Entry{kNone, kNoColumn};
      e = BestOfWarp(e);
      if (lane == 0) winner = e;
    }
    __syncthreads();
    const Entry w = winner;
    // Columns are unique, so exactly one thread owns the winner.
    if (head < kept && w.column == mine.column) ++head;
    if (threadIdx.x == 0) {
      const bool valid = w.column != kNoColumn;
      values[row * count + k] = valid ? w.value : kNone;
      columns[row * count + k] = valid ? w.column : -1;
    }
    __syncthreads();  // `winner` and `warp_best` are rewritten next round.
  }
}

}  // namespace

const char* LaunchRowTopK(const float* x, int64_t rows, int64_t n, int count, int64_t forbidden,
                          float* values, int32_t* columns, StreamHandle stream) {
  if (count < 1 || count > kMaxCount) return "row_top_k: count outside [1, 64]";
  if (rows == 0) return nullptr;
  if (rows > 0x7fffffff) return "row_top_k: more rows than a CUDA grid holds";
  RowTopKKernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, n, count, forbidden, values, columns);
  return cuda_elementwise::LastError();
}

}  // namespace tfm
