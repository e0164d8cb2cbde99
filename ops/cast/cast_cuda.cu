// CUDA kernels of cast: a grid-stride loop through f32 with the rounding
// intrinsics of ops/cuda_elementwise.cuh, so its bits equal the CPU
// kernel's, and the same conversion over a list of tensors in one launch
// (a pass's weights, or its 16-bit weight gradients, most of them small:
// one launch instead of one per tensor). A small share of a step: plain
// element loads suffice.
#include "ops/cast/cast_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_multi_tensor.cuh"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::ToFloat;

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* out, int64_t count) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    out[i] = FromFloat<To>(ToFloat(x[i]));
  }
}

constexpr int64_t kListChunk = 16 * kThreads;
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
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      out[i] = FromFloat<To>(ToFloat(x[i]));
    }
  }
}

}  // namespace

template <typename From, typename To>
const char* LaunchCast(const From* x, To* out, int64_t count, StreamHandle stream) {
  if (count == 0) return nullptr;
  using F = DeviceT<From>;
  using T = DeviceT<To>;
  CastKernel<F, T><<<BlocksFor(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
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
