// CUDA kernels of relu: packed element-wise maps (ops/cuda_elementwise.cuh)
// with the CPU kernel's comparisons, so the results match it bit for bit.
#include "ops/cuda_elementwise.cuh"
#include "ops/relu/relu_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::DeviceT;
using cuda_elementwise::LaunchMap;
using cuda_elementwise::MapInputs;

struct ReluOp {
  // "Not x <= 0" keeps x > 0 and NaN; -0 and negatives become +0.
  __device__ float operator()(int64_t, const float (&v)[1]) const {
    return !(v[0] <= 0.0f) ? v[0] : 0.0f;
  }
};

struct ReluBackwardOp {
  float scale;
  // Ordered compare: out = 0 or NaN passes no gradient. v = {dout, out}.
  __device__ float operator()(int64_t, const float (&v)[2]) const {
    return v[1] > 0.0f ? v[0] * scale : 0.0f;
  }
};

}  // namespace

template <typename T>
const char* LaunchRelu(const T* x, T* y, int64_t count, StreamHandle stream) {
  using D = DeviceT<T>;
  return LaunchMap<1>(ReluOp(), static_cast<cudaStream_t>(stream), reinterpret_cast<D*>(y), count,
                      MapInputs<1, D>{{reinterpret_cast<const D*>(x)}});
}

template <typename T>
const char* LaunchReluBackward(const T* dout, const T* out, T* dx, int64_t count, float scale,
                               StreamHandle stream) {
  using D = DeviceT<T>;
  return LaunchMap<2>(
      ReluBackwardOp{scale}, static_cast<cudaStream_t>(stream), reinterpret_cast<D*>(dx), count,
      MapInputs<2, D>{{reinterpret_cast<const D*>(dout), reinterpret_cast<const D*>(out)}});
}

#define TFM_INSTANTIATE_RELU(T)                                            \
  template const char* LaunchRelu<T>(const T*, T*, int64_t, StreamHandle); \
  template const char* LaunchReluBackward<T>(const T*, const T*, T*, int64_t, float, StreamHandle);
TFM_INSTANTIATE_RELU(float)
TFM_INSTANTIATE_RELU(Half)
TFM_INSTANTIATE_RELU(BFloat16)
#undef TFM_INSTANTIATE_RELU

}  // namespace tfm
