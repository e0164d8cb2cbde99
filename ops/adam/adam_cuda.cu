// CUDA kernel of adam and multi_tensor_adam: multi-tensor, one block per
// chunk of a tensor (ops/cuda_multi_tensor.cuh), the same arithmetic as
// AdamCpu per element (fused multiply-adds where it has them, none
// elsewhere).
#include <cuda_runtime.h>

#include "ops/adam/adam_cuda.h"
#include "ops/cuda_elementwise.cuh"
#include "ops/cuda_multi_tensor.cuh"

namespace tfm {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16 * kThreads;
constexpr int64_t kMaxBlocks = 1 << 16;

__global__ void __launch_bounds__(kThreads)
    AdamKernel(const AdamCudaTensor* __restrict__ tensors, int num_tensors, int64_t total_chunks,
               const AdamStep c, const float* __restrict__ grad_sum_of_squares,
               const float* __restrict__ skip_guard, double max_norm) {
  // Read on the device: the host never waits for the norm. Every thread
  // reads the same two scalars, so a skipped update writes nothing.
  if (SkipsUpdate(grad_sum_of_squares, skip_guard)) return;
  const float grad_scale =
      grad_sum_of_squares == nullptr ? 1.0f : ClipFactor(*grad_sum_of_squares, max_norm);
  for (int64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    const AdamCudaTensor t = tensors[cuda_multi_tensor::FindEntry(tensors, num_tensors, chunk)];
    const int64_t begin = (chunk - t.first_chunk) * kChunk;
    const int64_t end = begin + kChunk < t.count ? begin + kChunk : t.count;
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      // Rounded on its own, as scale_in_place's product would be.
      const float g = __fmul_rn(t.grad[i], grad_scale);
      const float m = fmaf(c.beta1, t.m[i], c.one_minus_beta1 * g);
      const float v = fmaf(c.beta2, t.v[i], c.one_minus_beta2 * g * g);
      // torch's order: sqrt(v) / sqrt(1 - beta2^t) + eps, then m / that.
      const float denom = __fadd_rn(__fdiv_rn(sqrtf(v), c.correction2_sqrt), c.eps);
      t.m[i] = m;
      t.v[i] = v;
      t.param[i] = __fsub_rn(t.param[i], __fmul_rn(c.step_size, __fdiv_rn(m, denom)));
    }
  }
}

}  // namespace

const char* LaunchAdamFromHost(AdamCudaTensor* tensors, int num_tensors,
                               AdamCudaTensor* device_list, const AdamStep& step,
                               const float* grad_sum_of_squares, const float* skip_guard,
                               double max_norm, StreamHandle stream) {
  return cuda_multi_tensor::LaunchOverList(
      AdamKernel, kThreads, kChunk, kMaxBlocks, tensors, num_tensors, device_list,
      static_cast<cudaStream_t>(stream), step, grad_sum_of_squares, skip_guard, max_norm);
}

}  // namespace tfm
