// CUDA kernel of cast: a grid-stride loop through f32 with the rounding
// intrinsics of ops/cuda_elementwise.cuh, so its bits equal the CPU
// kernel's. It runs once per pass over the weights (and once per weight
// gradient), a small share of a step: plain element loads suffice.
#include "ops/cast/cast_cuda.h"
#include "ops/cuda_elementwise.cuh"

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

#define TFM_INSTANTIATE_CAST(From, To) \
  template const char* LaunchCast<From, To>(const From*, To*, int64_t, StreamHandle);
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
