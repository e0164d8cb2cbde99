// CUDA kernels of positional_encoding, add_positional_encoding and
// add_positional_encoding_at. Each element evaluates the header's formula in
// double, as the CPU's table does, and rounds to f32 once, so the encodings
// agree with the CPU's to the last bit but for the rare case where double
// exp/sin/cos round differently in CUDA's libdevice and libm. No table:
// the arithmetic hides under the memory traffic of the add.
#include "ops/cuda_elementwise.cuh"
#include "ops/positional_encoding/positional_encoding_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::BlocksFor;
using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::GlobalThread;
using cuda_elementwise::GridThreads;
using cuda_elementwise::kThreads;
using cuda_elementwise::LastError;
using cuda_elementwise::LaunchMap;
using cuda_elementwise::MapInputs;

// PE(position)[j], the expression of the CPU's Frequencies and EncodeRow.
__device__ __forceinline__ float Encoding(int64_t position, int64_t j, int64_t d_model) {
  const double frequency =
      exp(-log(10000.0) * (2.0 * static_cast<double>(j / 2)) / static_cast<double>(d_model));
  const double angle = static_cast<double>(position) * frequency;
  return static_cast<float>(j % 2 == 0 ? sin(angle) : cos(angle));
}

template <typename D>
__global__ void PositionalEncodingKernel(D* pe, int64_t count, int64_t d_model, int64_t offset) {
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    pe[i] = FromFloat<D>(Encoding(offset + i / d_model, i % d_model, d_model));
  }
}

struct AddEncodingOp {
  int64_t length;
  int64_t d_model;
  int64_t offset;
  __device__ float operator()(int64_t i, const float (&v)[1]) const {
    return v[0] + Encoding(offset + (i / d_model) % length, i % d_model, d_model);
  }
};

// AddEncodingOp with the offset read from device memory (a captured graph
// replays the same launch at every step): the same int64 offset and the
// same arithmetic, so the same bits.
struct AddEncodingAtOp {
  int64_t length;
  int64_t d_model;
  const int32_t* position;
  __device__ float operator()(int64_t i, const float (&v)[1]) const {
    const int64_t offset = *position;
    return v[0] + Encoding(offset + (i / d_model) % length, i % d_model, d_model);
  }
};

}  // namespace

template <typename T>
const char* LaunchPositionalEncoding(T* pe, int64_t length, int64_t d_model, int64_t offset,
                                     StreamHandle stream) {
  const int64_t count = length * d_model;
  if (count == 0) return nullptr;
  PositionalEncodingKernel<<<BlocksFor(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<DeviceT<T>*>(pe), count, d_model, offset);
  return LastError();
}

template <typename T>
const char* LaunchAddPositionalEncoding(const T* x, T* out, int64_t count, int64_t length,
                                        int64_t d_model, int64_t offset, StreamHandle stream) {
  using D = DeviceT<T>;
  if (count == 0) return nullptr;  // Also when length or d_model is 0.
  return LaunchMap<1>(AddEncodingOp{length, d_model, offset}, static_cast<cudaStream_t>(stream),
                      reinterpret_cast<D*>(out), count,
                      MapInputs<1, D>{{reinterpret_cast<const D*>(x)}});
}

template <typename T>
const char* LaunchAddPositionalEncodingAt(const T* x, T* out, int64_t count, int64_t length,
                                          int64_t d_model, const int32_t* position,
                                          StreamHandle stream) {
  using D = DeviceT<T>;
  if (count == 0) return nullptr;  // Also when length or d_model is 0.
  return LaunchMap<1>(AddEncodingAtOp{length, d_model, position},
                      static_cast<cudaStream_t>(stream), reinterpret_cast<D*>(out), count,
                      MapInputs<1, D>{{reinterpret_cast<const D*>(x)}});
}

#define TFM_INSTANTIATE_POSITIONAL_ENCODING(T)                                                   \
  template const char* LaunchPositionalEncoding<T>(T*, int64_t, int64_t, int64_t, StreamHandle); \
  template const char* LaunchAddPositionalEncoding<T>(const T*, T*, int64_t, int64_t, int64_t,   \
                                                      int64_t, StreamHandle);                    \
  template const char* LaunchAddPositionalEncodingAt<T>(const T*, T*, int64_t, int64_t,          \
                                                        int64_t, const int32_t*, StreamHandle);
TFM_INSTANTIATE_POSITIONAL_ENCODING(float)
TFM_INSTANTIATE_POSITIONAL_ENCODING(Half)
TFM_INSTANTIATE_POSITIONAL_ENCODING(BFloat16)
#undef TFM_INSTANTIATE_POSITIONAL_ENCODING

}  // namespace tfm
