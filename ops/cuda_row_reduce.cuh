// Device helpers of the row-wise CUDA kernels (layer_norm, softmax,
// cross-entropy, gradient norms): a row is held by a group of kWidth threads
// (a power-of-two part of a warp, or the whole block) and reduced in a fixed
// order, so that every run gives the same bits and every thread of the group
// receives the result. Included only by .cu files (CUDA_COMMON_HDRS in
// ops/op.bzl).
#ifndef TFM_OPS_CUDA_ROW_REDUCE_CUH_
#define TFM_OPS_CUDA_ROW_REDUCE_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace tfm {
namespace cuda_row_reduce {

constexpr int kWarp = 32;
// Threads per block of the row kernels.
constexpr int kRowThreads = 256;
// Rows up to this long take one warp each, longer ones a whole block.
constexpr int64_t kMaxWarpRow = 1024;
// Blocks of a row kernel at most; its grid-stride loop covers more rows.
constexpr int64_t kMaxRowBlocks = 1 << 20;

// Calls launch(std::integral_constant<int, kWidth>()) with the group width
// for rows of n elements: a warp up to kMaxWarpRow, else the whole block.
template <typename Launch>
void ForRowWidth(int64_t n, Launch launch) {
  if (n <= kMaxWarpRow) {
    launch(std::integral_constant<int, kWarp>());
  } else {
    launch(std::integral_constant<int, kRowThreads>());
  }
}

// Blocks of kRowThreads threads for `rows` rows of kWidth threads each.
template <int kWidth>
int RowBlocks(int64_t rows) {
  constexpr int kGroups = kRowThreads / kWidth;
  return static_cast<int>(std::min<int64_t>(kMaxRowBlocks, (rows + kGroups - 1) / kGroups));
}

struct Sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const {
    return a + b;
  }
};

// fmaxf: a NaN is ignored unless both are NaN, as in the CPU kernels' max scans.
struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The max, or NaN if either is NaN (in either argument position).
struct MaxOrNaN {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return (a != a || a > b) ? a : b;
  }
};

// Scratch of GroupReduce for groups wider than a warp: one value per warp.
template <typename T>
struct GroupScratch {
  T per_warp[1024 / kWarp];
};

// Reduces `value` over the kWidth threads of a group with `op`; every thread
// of the group gets the same result. kWidth is a power of two <= 32 (groups
// are aligned parts of a warp), or blockDim.x (a multiple of 32, the whole
// block). Every thread of the warp (kWidth <= 32) or of the block (kWidth >
// 32) must call it, so a group without a row of its own reduces identities;
// wider groups need `scratch` in shared memory and synchronise the block.
// The butterfly gives every lane bitwise the same sum (+ commutes exactly).
template <int kWidth, typename T, typename Op>
__device__ __forceinline__ T GroupReduce(T value, Op op, GroupScratch<T>* scratch) {
  static_assert(kWidth <= kWarp ? (kWidth & (kWidth - 1)) == 0 : kWidth % kWarp == 0,
                "kWidth: a power of two up to 32, or whole warps");
  constexpr int kLanes = kWidth < kWarp ? kWidth : kWarp;
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  if constexpr (kWidth > kWarp) {
    const int warp = threadIdx.x / kWarp;
    if (threadIdx.x % kWarp == 0) scratch->per_warp[warp] = value;
    __syncthreads();
    value = scratch->per_warp[0];
#pragma unroll
    for (int w = 1; w < kWidth / kWarp; ++w) value = op(value, scratch->per_warp[w]);
    __syncthreads();  // The scratch may be reused at once.
  }
  return value;
}

}  // namespace cuda_row_reduce
}  // namespace tfm

#endif  // TFM_OPS_CUDA_ROW_REDUCE_CUH_
