// Device helpers shared by the memory-bound CUDA kernels of the ops: the
// device type of a host element type, f32 conversions (compute in f32, round
// once at the store), 16-byte packs for vector loads, grid sizing for
// grid-stride loops, and the launch error text. Included only by .cu files
// (listed in CUDA_COMMON_HDRS of ops/op.bzl).
#ifndef TFM_OPS_CUDA_ELEMENTWISE_CUH_
#define TFM_OPS_CUDA_ELEMENTWISE_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace tfm {

struct Half;
struct BFloat16;

namespace cuda_elementwise {

// The device storage type of a host element type (same size and bits):
// float -> float, Half -> __half, BFloat16 -> __nv_bfloat16; others as is.
template <typename T>
struct OnDevice {
  using type = T;
};
template <>
struct OnDevice<Half> {
  using type = __half;
};
template <>
struct OnDevice<BFloat16> {
  using type = __nv_bfloat16;
};
template <typename T>
using DeviceT = typename OnDevice<T>::type;

__device__ __forceinline__ float ToFloat(float x) { return x; }
__device__ __forceinline__ float ToFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 x) { return __bfloat162float(x); }

// Round to nearest even.
template <typename D>
__device__ __forceinline__ D FromFloat(float x);
template <>
__device__ __forceinline__ float FromFloat<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// 16 bytes of elements, loaded and stored as one vector access (the address
// must be 16-byte aligned).
template <typename D>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(D);
  D v[kSize];
};

inline bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; grid-stride loops cover the rest.
constexpr int64_t kMaxBlocks = 8192;

// Blocks of kThreads for `work_items` thread steps (at least 1).
inline int BlocksFor(int64_t work_items) {
  return static_cast<int>(
      std::min<int64_t>(kMaxBlocks, std::max<int64_t>(1, (work_items + kThreads - 1) / kThreads)));
}

// nullptr, or the text of the last launch or runtime error.
inline const char* LastError() {
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

inline const char* ErrorText(cudaError_t error) {
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

// Index of this thread in the grid, and the grid's thread count.
__device__ __forceinline__ int64_t GlobalThread() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t GridThreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

}  // namespace cuda_elementwise
}  // namespace tfm

#endif  // TFM_OPS_CUDA_ELEMENTWISE_CUH_
