// linear's bias kernels for when cuBLASLt cannot fuse the bias (or its
// gradient) into a GEMM: a row broadcast and a column sum.
#include <cuda_runtime.h>

#include "ops/cuda_elementwise.cuh"
#include "ops/linear/linear_cuda.h"

namespace tfm {
namespace {

using cuda_elementwise::DeviceT;
using cuda_elementwise::FromFloat;
using cuda_elementwise::LastError;
using cuda_elementwise::ToFloat;

template <typename T>
__global__ void BroadcastRowKernel(const T* __restrict__ row, int64_t rows, int64_t cols,
                                   T* __restrict__ out) {
  const int64_t count = rows * cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = row[i % cols];
  }
}

// A block sums kSumColumns adjacent columns (one warp wide, so every row's
// read is one coalesced segment) with kSumLanes threads per column taking
// every kSumLanes-th row, then adds the lanes in a fixed order:
// deterministic, no atomics.
constexpr int kSumColumns = 32;
constexpr int kSumLanes = 16;

template <typename T>
__global__ void SumRowsKernel(const T* __restrict__ in, int64_t rows, int64_t cols,
                              T* __restrict__ out) {
  __shared__ float partial[kSumLanes][kSumColumns + 1];
  const int64_t col = blockIdx.x * static_cast<int64_t>(kSumColumns) + threadIdx.x;
  float sum = 0.0f;
  if (col < cols) {
    for (int64_t r = threadIdx.y; r < rows; r += kSumLanes) sum += ToFloat(in[r * cols + col]);
  }
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float total = 0.0f;
    for (int lane = 0; lane < kSumLanes; ++lane) total += partial[lane][threadIdx.x];
    out[col] = FromFloat<T>(total);
  }
}

template <typename T>
const char* BroadcastRow(const void* row, int64_t rows, int64_t cols, void* out,
                         StreamHandle stream) {
  const int64_t count = rows * cols;
  if (count == 0) return nullptr;
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  BroadcastRowKernel<T><<<static_cast<int>(blocks < 65535 * 8 ? blocks : 65535 * 8), kThreads, 0,
                          static_cast<cudaStream_t>(stream)>>>(static_cast<const T*>(row), rows,
                                                               cols, static_cast<T*>(out));
  return LastError();
}

template <typename T>
const char* SumRows(const void* in, int64_t rows, int64_t cols, void* out, StreamHandle stream) {
  if (cols == 0) return nullptr;
  const int64_t blocks = (cols + kSumColumns - 1) / kSumColumns;
  SumRowsKernel<T><<<static_cast<unsigned int>(blocks), dim3(kSumColumns, kSumLanes), 0,
                     static_cast<cudaStream_t>(stream)>>>(static_cast<const T*>(in), rows, cols,
                                                          static_cast<T*>(out));
  return LastError();
}

}  // namespace

template <typename T>
const char* LaunchBroadcastRow(const T* row, int64_t rows, int64_t cols, T* out,
                               StreamHandle stream) {
  return BroadcastRow<DeviceT<T>>(row, rows, cols, out, stream);
}

template <typename T>
const char* LaunchSumRows(const T* in, int64_t rows, int64_t cols, T* out, StreamHandle stream) {
  return SumRows<DeviceT<T>>(in, rows, cols, out, stream);
}

#define TFM_INSTANTIATE_LINEAR_CUDA(T)                                                      \
  template const char* LaunchBroadcastRow<T>(const T*, int64_t, int64_t, T*, StreamHandle); \
  template const char* LaunchSumRows<T>(const T*, int64_t, int64_t, T*, StreamHandle)
TFM_INSTANTIATE_LINEAR_CUDA(float);
TFM_INSTANTIATE_LINEAR_CUDA(Half);
TFM_INSTANTIATE_LINEAR_CUDA(BFloat16);

}  // namespace tfm
