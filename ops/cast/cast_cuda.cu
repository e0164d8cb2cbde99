// CUDA kernels of cast: a grid-stride loop through f32 with the rounding
// intrinsics of ops/cuda_elementwise.cuh, so its bits equal the CPU
// kernel's, and the same conversion over a list of tensors in one launch
// (a pass's weights, or its 16-bit weight gradients, most of them small:
// one launch instead of one per tensor). Both move runs of 8 elements as
// 16-byte accesses where the tensors are 16-byte aligned: with one element
// a thread at a time the list casts of a big model's update (214M weights
// to bf16, 176M gradients back) ran at half of HBM bandwidth.
#include "ops/cast/cast_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_multi_tensor.cuh"

namespace tfm {
namespace {

using cuda_elementwise::Aligned16;
using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::ToFloat;

// 8 elements, moved as one or two 16-byte accesses.
template <typename D>
struct alignas(16) Run8 {
  static_assert(8 * sizeof(D) % 16 == 0, "8 elements of 2 or 4 bytes: whole 16-byte accesses");
  D v[8];
};

// out[i] = x[i] rounded for i in [begin, end), by the threads
// [thread, thread + threads): runs of 8 from `begin` (a multiple of 8) when
// `runs`, each run's loads ahead of its stores, then the rest one by one.
template <typename From, typename To>
__device__ __forceinline__ void CastRange(const From* x, To* out, int64_t begin, int64_t end,
                                          int64_t thread, int64_t threads, bool runs) {
  int64_t rest = begin;
  if (runs) {
    const int64_t runs_end = begin + (end - begin) / 8 * 8;
    for (int64_t i = begin + 8 * thread; i < runs_end; i += 8 * threads) {
      const Run8<From> in = *reinterpret_cast<const Run8<From>*>(x + i);
      Run8<To> result;
#pragma unroll
      for (int j = 0; j < 8; ++j) result.v[j] = FromFloat<To>(ToFloat(in.v[j]));
      *reinterpret_cast<Run8<To>*>(out + i) = result;
    }
    rest = runs_end;
  }
  for (int64_t i = rest + thread; i < end; i += threads) out[i] = FromFloat<To>(ToFloat(x[i]));
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* out, int64_t count) {
  CastRange(x, out, 0, count, GlobalThread(), GridThreads(), Aligned16(x) && Aligned16(out));
}

constexpr int64_t kListChunk = 16 * kThreads;  // A multiple of 8.
constexpr int64_t kListMaxBlocks = 1 << 16;

template <typename From, typename To>
__global__ void __launch_bounds__(kThreads)
    CastListKernel(const CastCudaTensor* __restrict__ tensors, int num_tensors,
                   int64_t total_chunks) {
  for (int64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const CastCudaTensor t = tensors[cuda_multi_tensor::FindEntry(tensors, num_tensors, chunk)];
    const From* x = static_cast<const From*>(t.x);
    To* out = static_cast<To*>(t.out);
    const int64_t begin = (chunk - t.first_chunk) * kListChunk;
    const int64_t end = begin + kListChunk < t.count ? begin + kListChunk : t.count;
    CastRange(x, out, begin, end, threadIdx.x, kThreads, Aligned16(x) && Aligned16(out));
  }
}

}  // namespace

template <typename From, typename To>
const char* LaunchCast(const From* x, To* out, int64_t count, StreamHandle stream) {
  if (count == 0) return nullptr;
  using F = DeviceT<From>;
  using T = DeviceT<To>;
  CastKernel<F, T><<<BlocksFor((count + 7) / 8), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<const F*>(x), reinterpret_cast<T*>(out), count);
  return cuda_elementwise::LastError();
}

template <typename From, typename To>
const char* LaunchCastList(CastCudaTensor* tensors, int num_tensors, CastCudaTensor* device_list,
                           StreamHandle stream) {
  return cuda_multi_tensor::LaunchOverList(CastListKernel<DeviceT<From>, DeviceT<To>>, kThreads,
                                           kListChunk, kListMaxBlocks, tensors, num_tensors,
                                           device_list, static_cast<cudaStream_t>(stream));
}

#define TFM_INSTANTIATE_CAST(From, To)                                                       \
  template const char* LaunchCast<From, To>(const From*, To*, int64_t, StreamHandle);        \
  template const char* LaunchCastList<From, To>(CastCudaTensor*, int, CastCudaTensor*,       \
                                                StreamHandle);
#define TFM_INSTANTIATE_CAST_FROM(From) \
  TFM_INSTANTIATE_CAST(From, float)     \
  TFM_INSTANTIATE_CAST(From, Half)      \
  TFM_INSTANTIATE_CAST(From, BFloat16)
TFM_INSTANTIATE_CAST_FROM(float)
TFM_INSTANTIATE_CAST_FROM(Half)
TFM_INSTANTIATE_CAST_FROM(BFloat16)
#undef TFM_INSTANTIATE_CAST_FROM
#undef TFM_INSTANTIATE_CAST

}  // namespace tfm
