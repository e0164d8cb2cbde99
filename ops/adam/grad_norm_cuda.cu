// CUDA kernels of multi_tensor_sum_of_squares and scale_in_place. The sum
// runs in double: one block per fixed chunk of a tensor of the list
// (ops/cuda_multi_tensor.cuh), then one block over all chunks, each in a
// fixed order, so it does not depend on the grid.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "ops/adam/grad_norm_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_multi_tensor.cuh"
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
    ChunkSquaresKernel(const SquaresCudaTensor* __restrict__ tensors, int num_tensors,
                       int64_t total_chunks, double* __restrict__ partial) {
  __shared__ GroupScratch<double> scratch;
  for (int64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const SquaresCudaTensor t = tensors[cuda_multi_tensor::FindEntry(tensors, num_tensors, chunk)];
    const D* x = static_cast<const D*>(t.x);
    const int64_t begin = (chunk - t.first_chunk) * kChunk;
    const int64_t end = begin + kChunk < t.count ? begin + kChunk : t.count;
    double sum = 0.0;
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
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
  if (threadIdx.x == 0) *total = static_cast<float>(sum);
}

struct Scale {
  float factor;
  __device__ float operator()(int64_t, const float (&v)[1]) const { return v[0] * factor; }
};

}  // namespace

int64_t SumOfSquaresChunks(SquaresCudaTensor* tensors, int num_tensors) {
  return cuda_multi_tensor::AssignFirstChunks(tensors, num_tensors, kChunk);
}

template <typename T>
const char* LaunchSumOfSquares(const SquaresCudaTensor* tensors, int num_tensors,
                               int64_t total_chunks, SquaresCudaTensor* device_list,
                               double* workspace, float* sum, StreamHandle stream) {
  using D = DeviceT<T>;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (total_chunks > 0) {
    if (const char* error =
            cuda_multi_tensor::UploadList(tensors, num_tensors, device_list, s)) {
      return error;
    }
    ChunkSquaresKernel<D>
        <<<static_cast<int>(total_chunks < kMaxBlocks ? total_chunks : kMaxBlocks), kThreads, 0,
           s>>>(device_list, num_tensors, total_chunks, workspace);
    if (const char* error = LastError()) return error;
  }
  TotalKernel<<<1, kThreads, 0, s>>>(workspace, total_chunks, sum);
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

#define TFM_INSTANTIATE_GRAD_NORM_CUDA(T)                                                      \
  template const char* LaunchSumOfSquares<T>(const SquaresCudaTensor*, int, int64_t,          \
                                             SquaresCudaTensor*, double*, float*,             \
                                             StreamHandle);                                   \
  template const char* LaunchScaleInPlace<T>(T*, int64_t, float, StreamHandle)
TFM_INSTANTIATE_GRAD_NORM_CUDA(float);
TFM_INSTANTIATE_GRAD_NORM_CUDA(BFloat16);

}  // namespace tfm
