// Device helpers of the CUDA kernels that sum per-column gradients over the
// rows of a [rows, d] matrix (layer_norm's dgain and dbias,
// residual_layer_norm's too and its dh_bias): without atomics, in a fixed
// order, so every run gives the same bits. Two levels: ColumnPartialsKernel
// (one block per kColumns columns and chunk of ChunkRows rows, kRowLanes
// row lanes per column, combined by SumRowLanes) writes each chunk's sums
// into a workspace laid out [chunk][sum][d], with the op's own functor for
// a row's terms; ColumnTotalsKernel then adds the chunks in order.
// LaunchColumnSums runs both. Included only by .cu files (CUDA_COMMON_HDRS
// in ops/op.bzl).
#ifndef TFM_OPS_CUDA_COLUMN_SUMS_CUH_
#define TFM_OPS_CUDA_COLUMN_SUMS_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"

namespace tfm {
namespace cuda_column_sums {

constexpr int kThreads = cuda_row_reduce::kRowThreads;
// kColumns columns by kRowLanes rows per block, over chunks of at least
// kMinChunkRows rows and at most kMaxChunks chunks (gridDim.y).
constexpr int kColumns = 32;
constexpr int kRowLanes = kThreads / kColumns;
constexpr int64_t kMinChunkRows = 128;
constexpr int64_t kMaxChunks = 1024;
// Sums per column that ColumnTotalsKernel takes at most.
constexpr int kMaxSums = 3;

inline int64_t ChunkRows(int64_t rows) {
  return std::max<int64_t>(kMinChunkRows, (rows + kMaxChunks - 1) / kMaxChunks);
}
inline int64_t NumChunks(int64_t rows) { return (rows + ChunkRows(rows) - 1) / ChunkRows(rows); }
inline unsigned ColumnTiles(int64_t d) {
  return static_cast<unsigned>((d + kColumns - 1) / kColumns);
}
// Floats of the workspace for `sums` sums per column.
inline int64_t WorkspaceFloats(int64_t rows, int64_t d, int sums) {
  return NumChunks(rows) * sums * d;
}

// Sums `value` over the kRowLanes row lanes of each of the block's
// kColumns columns, in lane order, for row lane 0 (the others get their own
// value back). Every thread of the block must call it.
__device__ __forceinline__ float SumRowLanes(float value, float (&lanes)[kRowLanes][kColumns]) {
  const int column_lane = threadIdx.x % kColumns, row_lane = threadIdx.x / kColumns;
  lanes[row_lane][column_lane] = value;
  __syncthreads();
  if (row_lane == 0) {
    for (int lane = 1; lane < kRowLanes; ++lane) value += lanes[lane][column_lane];
  }
  __syncthreads();  // `lanes` may be reused at once.
  return value;
}

// partial[blockIdx.y][k][column] for k < kSums: the sums over the rows of
// chunk blockIdx.y (chunk_rows each) of kColumns columns (block blockIdx.x).
// accumulate(r, column, sums) adds row r's terms of the column into
// sums[0..kSums) (a functor: the op's own arithmetic, an FMA say).
template <int kSums, typename Accumulate>
__global__ void __launch_bounds__(kThreads)
    ColumnPartialsKernel(Accumulate accumulate, int64_t rows, int64_t d, int64_t chunk_rows,
                         float* __restrict__ partial) {
  __shared__ float lanes[kRowLanes][kColumns];
  const int column_lane = threadIdx.x % kColumns, row_lane = threadIdx.x / kColumns;
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kColumns + column_lane;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * chunk_rows;
  const int64_t end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  float sums[kSums] = {};
  if (column < d) {
    for (int64_t r = begin + row_lane; r < end; r += kRowLanes) accumulate(r, column, sums);
  }
#pragma unroll
  for (int k = 0; k < kSums; ++k) sums[k] = SumRowLanes(sums[k], lanes);
  if (row_lane == 0 && column < d) {
    float* chunk = partial + static_cast<int64_t>(blockIdx.y) * kSums * d;
#pragma unroll
    for (int k = 0; k < kSums; ++k) chunk[k * d + column] = sums[k];
  }
}

// The output columns of ColumnTotalsKernel: out[k] for k < sums.
template <typename D>
struct ColumnOutputs {
  D* out[kMaxSums];
};

// out[k][column] = the chunks' partial sums k, kRowLanes lanes per column
// each over a fixed stride of chunks, then the lanes in order. Grid:
// ColumnTiles(d) blocks of kThreads. kSums is a template parameter so that
// the totals stay in registers (indexed by a run-time count they went to
// local memory, read and written at every chunk).
template <typename D, int kSums>
__global__ void __launch_bounds__(kThreads)
    ColumnTotalsKernel(const float* __restrict__ partial, int64_t chunks, int64_t d,
                       ColumnOutputs<D> outputs) {
  __shared__ float lanes[kRowLanes][kColumns];
  const int column_lane = threadIdx.x % kColumns, row_lane = threadIdx.x / kColumns;
  const int64_t column = static_cast<int64_t>(blockIdx.x) * kColumns + column_lane;
  float totals[kSums] = {};
  if (column < d) {
    for (int64_t chunk = row_lane; chunk < chunks; chunk += kRowLanes) {
#pragma unroll
      for (int k = 0; k < kSums; ++k) totals[k] += partial[(chunk * kSums + k) * d + column];
    }
  }
#pragma unroll
  for (int k = 0; k < kSums; ++k) {
    totals[k] = SumRowLanes(totals[k], lanes);
    if (row_lane == 0 && column < d) {
      outputs.out[k][column] = cuda_elementwise::FromFloat<D>(totals[k]);
    }
  }
}

// outputs.out[k][0..d) = the totals of `chunks` chunks of partial sums
// k < kSums laid out [chunk][k][d] (ColumnPartialsKernel's layout).
template <int kSums, typename D>
const char* LaunchColumnTotals(const float* partial, int64_t chunks, int64_t d,
                               ColumnOutputs<D> outputs, cudaStream_t stream) {
  static_assert(kSums <= kMaxSums, "ColumnOutputs holds kMaxSums columns");
  ColumnTotalsKernel<D, kSums>
      <<<ColumnTiles(d), kThreads, 0, stream>>>(partial, chunks, d, outputs);
  return cuda_elementwise::LastError();
}

// outputs.out[k][0..d) = the column sums k < kSums of `rows` rows, through
// `workspace` (WorkspaceFloats(rows, d, kSums) floats). With no rows the
// sums are zeros, still written. Returns nullptr or the CUDA error text.
template <int kSums, typename D, typename Accumulate>
const char* LaunchColumnSums(Accumulate accumulate, int64_t rows, int64_t d, float* workspace,
                             ColumnOutputs<D> outputs, cudaStream_t stream) {
  static_assert(kSums <= kMaxSums, "ColumnOutputs holds kMaxSums columns");
  const int64_t chunks = NumChunks(rows);
  if (rows > 0) {
    const dim3 grid(ColumnTiles(d), static_cast<unsigned>(chunks));
    ColumnPartialsKernel<kSums>
        <<<grid, kThreads, 0, stream>>>(accumulate, rows, d, ChunkRows(rows), workspace);
    if (const char* error = cuda_elementwise::LastError()) return error;
  }
  return LaunchColumnTotals<kSums>(workspace, chunks, d, outputs, stream);
}

}  // namespace cuda_column_sums
}  // namespace tfm

#endif  // TFM_OPS_CUDA_COLUMN_SUMS_CUH_
