// CUDA kernels of multi_tensor_scale_by (multi-tensor, one block per chunk
// of a tensor: ops/cuda_multi_tensor.cuh) and loss_scale_step (one thread).
#include <cuda_runtime.h>

#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_multi_tensor.cuh"
#include "ops/loss_scale/loss_scale_cuda.h"
#include "ops/loss_scale/loss_scale_kernel_args.h"

namespace tfm {
namespace {

using cuda_elementwise::LastError;

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16 * kThreads;
constexpr int64_t kMaxBlocks = 1 << 16;

__global__ void __launch_bounds__(kThreads)
    ScaleByKernel(const ScaleByCudaTensor* __restrict__ tensors, int num_tensors,
                  int64_t total_chunks, const float* __restrict__ scale, bool reciprocal) {
  // Read on the device: the host never learns the scale.
  const float factor = reciprocal ? __fdiv_rn(1.0f, *scale) : *scale;
  for (int64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const ScaleByCudaTensor t =
        tensors[cuda_multi_tensor::FindEntry(tensors, num_tensors, chunk)];
    const int64_t begin = (chunk - t.first_chunk) * kChunk;
    const int64_t end = begin + kChunk < t.count ? begin + kChunk : t.count;
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      t.x[i] = __fmul_rn(t.x[i], factor);
    }
  }
}

__global__ void LossScaleStepKernel(const float* scale, const float* clean,
                                    const float* sum_of_squares, int64_t window, float max_scale,
                                    float* next_scale, float* next_clean) {
  float s = *scale, c = *clean;
  StepLossScale(*sum_of_squares, window, max_scale, &s, &c);
  *next_scale = s;
  *next_clean = c;
}

}  // namespace

const char* LaunchScaleBy(ScaleByCudaTensor* tensors, int num_tensors,
                          ScaleByCudaTensor* device_list, const float* scale, bool reciprocal,
                          StreamHandle stream) {
  return cuda_multi_tensor::LaunchOverList(ScaleByKernel, kThreads, kChunk, kMaxBlocks, tensors,
                                           num_tensors, device_list,
                                           static_cast<cudaStream_t>(stream), scale, reciprocal);
}

const char* LaunchLossScaleStep(const float* scale, const float* clean,
                                const float* sum_of_squares, int64_t window, float max_scale,
                                float* next_scale, float* next_clean, StreamHandle stream) {
  LossScaleStepKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(
      scale, clean, sum_of_squares, window, max_scale, next_scale, next_clean);
  return LastError();
}

}  // namespace tfm
