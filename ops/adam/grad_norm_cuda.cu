// CUDA kernels of sum_of_squares and scale_in_place. The sum runs in double:
// one block per fixed chunk of elements, then one block over the chunks,
// each in a fixed order, so it does not depend on the grid.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ops/adam/grad_norm_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_row_reduce.cuh"

namespace tfm {
namespace {

using cuda_elementwise::DeviceT;
using cuda_elementwise::LastError;
using cuda_elementwise::ToFloat;
using cuda_row_reduce::GroupReduce;
using cuda_row_reduce::GroupScratch;
using cuda_row_reduce::Sum;

constexpr int kThreads = cuda_row_reduce::kRowThreads;
// As the CPU kernel's chunks (the order of additions differs all the same).
constexpr int64_t kChunk = 1 << 14;
constexpr int64_t kMaxBlocks = 1 << 16;

template <typename D>
__global__ void __launch_bounds__(kThreads)
    ChunkSquaresKernel(const D* __restrict__ x, int64_t count, double* __restrict__ partial) {
  __shared__ GroupScratch<double> scratch;
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  for (int64_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
    const int64_t end = (chunk + 1) * kChunk < count ? (chunk + 1) * kChunk : count;
    double sum = 0.0;
    for (int64_t i = chunk * kChunk + threadIdx.x; i < end; i += kThreads) {
      const double value = ToFloat(x[i]);
      sum = fma(value, value, sum);
    }
    sum = GroupReduce<kThreads>(sum, Sum(), &scratch);
    if (threadIdx.x == 0) partial[chunk] = sum;
  }
}

__global__ void __launch_bounds__(kThreads)
    TotalKernel(const double* __restrict__ partial, int64_t chunks, float* __restrict__ total) {
  __shared__ GroupScratch<double> scratch;
  double sum = 0.0;
  for (int64_t chunk = threadIdx.x; chunk < chunks; chunk += kThreads) sum += partial[chunk];
  sum = GroupReduce<kThreads>(sum, Sum(), &scratch);
  if (threadIdx.x == 0) *total = static_cast<float>(static_cast<double>(*total) + sum);
}

struct Scale {
  float factor;
  __device__ float operator()(int64_t, const float (&v)[1]) const { return v[0] * factor; }
};

}  // namespace

int64_t SumOfSquaresWorkspaceDoubles(int64_t count) { return (count + kChunk - 1) / kChunk; }

template <typename T>
const char* LaunchSumOfSquares(const T* x, int64_t count, double* workspace, float* sum,
                               StreamHandle stream) {
  using D = DeviceT<T>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int64_t chunks = SumOfSquaresWorkspaceDoubles(count);
  if (chunks > 0) {
    ChunkSquaresKernel<D>
        <<<static_cast<int>(chunks < kMaxBlocks ? chunks : kMaxBlocks), kThreads, 0, s>>>(
            reinterpret_cast<const D*>(x), count, workspace);
    if (const char* error = LastError()) return error;
  }
  TotalKernel<<<1, kThreads, 0, s>>>(workspace, chunks, sum);
  return LastError();
}

template <typename T>
const char* LaunchScaleInPlace(T* x, int64_t count, float factor, StreamHandle stream) {
  using D = DeviceT<T>;
  D* data = reinterpret_cast<D*>(x);
  // Every element is loaded before the same thread stores it: in place is
  // safe.
  return cuda_elementwise::LaunchMap<1, D>(Scale{factor}, static_cast<cudaStream_t>(stream), data,
                                           count, cuda_elementwise::MapInputs<1, D>{{data}});
}

#define TFM_INSTANTIATE_GRAD_NORM_CUDA(T)                                                       \
  template const char* LaunchSumOfSquares<T>(const T*, int64_t, double*, float*, StreamHandle); \
  template const char* LaunchScaleInPlace<T>(T*, int64_t, float, StreamHandle)
TFM_INSTANTIATE_GRAD_NORM_CUDA(float);
TFM_INSTANTIATE_GRAD_NORM_CUDA(BFloat16);

}  // namespace tfm
