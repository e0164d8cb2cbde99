// Device helpers shared by the memory-bound CUDA kernels of the ops: the
// device type of a host element type, f32 conversions (compute in f32, round
// once at the store), 16-byte packs for vector loads, grid sizing for
// grid-stride loops, error text, a packed element-wise map (MapKernel), and
// the index check of gathers (FindFirstOutOfRange). Included only by .cu
// files (listed in CUDA_COMMON_HDRS of ops/op.bzl).
#ifndef TFM_OPS_CUDA_ELEMENTWISE_CUH_
#define TFM_OPS_CUDA_ELEMENTWISE_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
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

// On the host (choosing a launch) and in kernels (per tensor of a list).
__host__ __device__ inline bool Aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

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

// A value of the current device, computed once (compute(device) > 0) and
// kept in `cache`, a slot a device; 1 where CUDA cannot say. For the grids
// that size themselves to the GPU: the driver calls at every launch would
// be host time before each kernel.
constexpr int kMaxDevices = 64;
template <typename Compute>
int OncePerDevice(std::atomic<int> (&cache)[kMaxDevices], Compute compute) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kMaxDevices) return 1;
  int value = cache[device].load(std::memory_order_relaxed);
  if (value == 0) {
    value = compute(device);
    if (value <= 0) return 1;
    cache[device].store(value, std::memory_order_relaxed);
  }
  return value;
}

// The current device's multiprocessor count.
inline int MultiprocessorCount() {
  static std::atomic<int> counts[kMaxDevices] = {};
  return OncePerDevice(counts, [](int device) {
    int count = 0;
    return cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) == cudaSuccess
               ? count
               : 0;
  });
}

// Blocks of kKernel, kThreads threads each without dynamic shared memory,
// that one multiprocessor of the current device holds at once.
template <auto kKernel, int kThreads>
int ResidentBlocksPerMultiprocessor() {
  static std::atomic<int> blocks[kMaxDevices] = {};
  return OncePerDevice(blocks, [](int) {
    int count = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&count, kKernel, kThreads, 0) ==
                   cudaSuccess
               ? count
               : 0;
  });
}

// Index of this thread in the grid, and the grid's thread count.
__device__ __forceinline__ int64_t GlobalThread() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}
__device__ __forceinline__ int64_t GridThreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Packs each thread keeps in flight in the map kernels.
constexpr int kUnroll = 4;

// The N same-shaped inputs of a map.
template <int N, typename D>
struct MapInputs {
  const D* ptr[N];
};

// out[i] = f(i, v) with v[n] = inputs.ptr[n][i] as f32, for i < count. f is
// a functor: float operator()(int64_t i, const float (&v)[N]) const. Packs
// [0, packs) first, kUnroll per thread step with every load ahead of the
// stores, then the remaining elements one by one.
template <int N, typename D, typename F>
__global__ void MapKernel(F f, D* out, int64_t count, int64_t packs, MapInputs<N, D> inputs) {
  using P = Pack<D>;
  const int64_t stride = GridThreads();
  for (int64_t first = GlobalThread(); first < packs; first += stride * kUnroll) {
    P loaded[N][kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      if (p < packs) {
#pragma unroll
        for (int n = 0; n < N; ++n) loaded[n][k] = reinterpret_cast<const P*>(inputs.ptr[n])[p];
      }
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t p = first + k * stride;
      if (p < packs) {
        P result;
#pragma unroll
        for (int j = 0; j < P::kSize; ++j) {
          float v[N];
#pragma unroll
          for (int n = 0; n < N; ++n) v[n] = ToFloat(loaded[n][k].v[j]);
          result.v[j] = FromFloat<D>(f(p * P::kSize + j, v));
        }
        reinterpret_cast<P*>(out)[p] = result;
      }
    }
  }
  for (int64_t i = packs * P::kSize + GlobalThread(); i < count; i += stride) {
    float v[N];
#pragma unroll
    for (int n = 0; n < N; ++n) v[n] = ToFloat(inputs.ptr[n][i]);
    out[i] = FromFloat<D>(f(i, v));
  }
}

// Launches MapKernel on `stream`, packed when every pointer is 16-byte
// aligned. Returns nullptr or the error text.
template <int N, typename D, typename F>
const char* LaunchMap(F f, cudaStream_t stream, D* out, int64_t count, MapInputs<N, D> inputs) {
  if (count == 0) return nullptr;
  bool aligned = Aligned16(out);
  for (int n = 0; n < N; ++n) aligned = aligned && Aligned16(inputs.ptr[n]);
  const int64_t packs = aligned ? count / Pack<D>::kSize : 0;
  const int64_t work = packs > 0 ? (packs + kUnroll - 1) / kUnroll : count;
  MapKernel<N, D, F><<<BlocksFor(work), kThreads, 0, stream>>>(f, out, count, packs, inputs);
  return LastError();
}

template <typename Id>
__global__ void FindOutOfRangeKernel(const Id* ids, int64_t count, int64_t limit,
                                     unsigned long long* first) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    if (ids[i] < 0 || ids[i] >= limit) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// Index checks of gathers (token ids, cache rows), whose kernels must not
// read outside their tables: finds the first i < count with ids[i] outside
// [0, limit). Sets *position = i and *value = ids[i], or *position = -1.
// `scratch` is 8 bytes of device memory. Waits for `stream`: the answer
// decides whether the caller launches at all. Returns nullptr or the error
// text.
template <typename Id>
const char* FindFirstOutOfRange(const Id* ids, int64_t count, int64_t limit,
                                unsigned long long* scratch, cudaStream_t stream, int64_t* position,
                                int64_t* value) {
  *position = -1;
  if (count == 0) return nullptr;
  if (const char* error = ErrorText(cudaMemsetAsync(scratch, 0xFF, sizeof(*scratch), stream))) {
    return error;
  }
  FindOutOfRangeKernel<Id><<<BlocksFor(count), kThreads, 0, stream>>>(ids, count, limit, scratch);
  if (const char* error = LastError()) return error;
  unsigned long long first = 0;
  if (const char* error = ErrorText(
          cudaMemcpyAsync(&first, scratch, sizeof(first), cudaMemcpyDeviceToHost, stream))) {
    return error;
  }
  if (const char* error = ErrorText(cudaStreamSynchronize(stream))) return error;
  if (first == ~0ull) return nullptr;
  Id id;
  if (const char* error = ErrorText(
          cudaMemcpyAsync(&id, ids + first, sizeof(id), cudaMemcpyDeviceToHost, stream))) {
    return error;
  }
  if (const char* error = ErrorText(cudaStreamSynchronize(stream))) return error;
  *position = static_cast<int64_t>(first);
  *value = static_cast<int64_t>(id);
  return nullptr;
}

}  // namespace cuda_elementwise
}  // namespace tfm

#endif  // TFM_OPS_CUDA_ELEMENTWISE_CUH_
