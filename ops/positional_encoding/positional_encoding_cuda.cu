// CUDA kernels of positional_encoding, add_positional_encoding and
// add_positional_encoding_at. Each encoding evaluates the header's formula
// in double, as the CPU's table does, and rounds to f32 once, so the
// encodings agree with the CPU's to the last bit but for the rare case where
// double exp/sin/cos round differently in CUDA's libdevice and libm. The
// adds compute each of their length x d_model encodings once into a table
// and then add it row by row: evaluated per element, the double arithmetic
// and 64-bit divisions took 10 times the add's memory time (0.29 ms for a
// big model's 576 x 48 x 1024 bf16 batch on an H200).
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

// pe[r * d_model + j] = PE(start + r)[j] for the count elements, start
// being *position where given (read on the device), else offset: the
// positional_encoding op's output, and the adds' table (D float).
template <typename D>
__global__ void PositionalEncodingKernel(D* pe, int64_t count, int64_t d_model, int64_t offset,
                                         const int32_t* position) {
  const int64_t start = position != nullptr ? static_cast<int64_t>(*position) : offset;
  for (int64_t i = GlobalThread(); i < count; i += GridThreads()) {
    pe[i] = FromFloat<D>(Encoding(start + i / d_model, i % d_model, d_model));
  }
}

// x [rows, d_model] with rows cycling through the table's `length`
// positions: element i adds table[i % (length * d_model)]. Index is
// uint32_t where every index fits (a 32-bit remainder), else int64_t.
template <typename Index>
struct AddTableOp {
  const float* table;
  Index period;  // length * d_model.
  __device__ float operator()(int64_t i, const float (&v)[1]) const {
    return v[0] + table[static_cast<Index>(i) % period];
  }
};

// The table, then the add.
template <typename T>
const char* AddThroughTable(const T* x, T* out, int64_t count, int64_t length, int64_t d_model,
                            int64_t offset, const int32_t* position, float* table,
                            StreamHandle stream) {
  using D = DeviceT<T>;
  if (count == 0) return nullptr;  // Also when length or d_model is 0.
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t period = length * d_model;
  PositionalEncodingKernel<float><<<BlocksFor(period), kThreads, 0, s>>>(table, period, d_model,
                                                                         offset, position);
  if (const char* error = LastError()) return error;
  const MapInputs<1, D> inputs{{reinterpret_cast<const D*>(x)}};
  D* y = reinterpret_cast<D*>(out);
  if (count <= static_cast<int64_t>(UINT32_MAX)) {
    return LaunchMap<1>(AddTableOp<uint32_t>{table, static_cast<uint32_t>(period)}, s, y, count,
                        inputs);
  }
  return LaunchMap<1>(AddTableOp<int64_t>{table, period}, s, y, count, inputs);
}

}  // namespace

template <typename T>
const char* LaunchPositionalEncoding(T* pe, int64_t length, int64_t d_model, int64_t offset,
                                     StreamHandle stream) {
  const int64_t count = length * d_model;
  if (count == 0) return nullptr;
  PositionalEncodingKernel<<<BlocksFor(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      reinterpret_cast<DeviceT<T>*>(pe), count, d_model, offset, /*position=*/nullptr);
  return LastError();
}

template <typename T>
const char* LaunchAddPositionalEncoding(const T* x, T* out, int64_t count, int64_t length,
                                        int64_t d_model, int64_t offset, float* table,
                                        StreamHandle stream) {
  return AddThroughTable(x, out, count, length, d_model, offset, nullptr, table, stream);
}

template <typename T>
const char* LaunchAddPositionalEncodingAt(const T* x, T* out, int64_t count, int64_t length,
                                          int64_t d_model, const int32_t* position, float* table,
                                          StreamHandle stream) {
  return AddThroughTable(x, out, count, length, d_model, 0, position, table, stream);
}

#define TFM_INSTANTIATE_POSITIONAL_ENCODING(T)                                                   \
  template const char* LaunchPositionalEncoding<T>(T*, int64_t, int64_t, int64_t, StreamHandle); \
  template const char* LaunchAddPositionalEncoding<T>(const T*, T*, int64_t, int64_t, int64_t,   \
                                                      int64_t, float*, StreamHandle);            \
  template const char* LaunchAddPositionalEncodingAt<T>(const T*, T*, int64_t, int64_t, int64_t, \
                                                        const int32_t*, float*, StreamHandle);
TFM_INSTANTIATE_POSITIONAL_ENCODING(float)
TFM_INSTANTIATE_POSITIONAL_ENCODING(Half)
TFM_INSTANTIATE_POSITIONAL_ENCODING(BFloat16)
#undef TFM_INSTANTIATE_POSITIONAL_ENCODING

}  // namespace tfm
