// CUDA kernel of adam: multi-tensor, one block per chunk of a tensor (found
// by a binary search over the list), the same arithmetic as AdamCpu per
// element (fused multiply-adds where it has them, none elsewhere).
#include <cuda_runtime.h>

#include <vector>

#include "ops/adam/adam_cuda.h"
#include "ops/cuda_elementwise.cuh"

namespace tfm {
namespace {

using cuda_elementwise::ErrorText;
using cuda_elementwise::LastError;

constexpr int kThreads = 256;
constexpr int64_t kChunk = 16 * kThreads;
constexpr int64_t kMaxBlocks = 1 << 16;

__global__ void __launch_bounds__(kThreads)
    AdamKernel(const AdamCudaTensor* __restrict__ tensors, int num_tensors, int64_t total_chunks,
               const AdamStep c) {
  for (int64_t chunk = blockIdx.x; chunk < total_chunks; chunk += gridDim.x) {
    // The last tensor whose first chunk is at or before this one.
    int low = 0, high = num_tensors - 1;
    while (low < high) {
      const int mid = (low + high + 1) / 2;
      if (tensors[mid].first_chunk <= chunk) {
        low = mid;
      } else {
        high = mid - 1;
      }
    }
    const AdamCudaTensor t = tensors[low];
    const int64_t begin = (chunk - t.first_chunk) * kChunk;
    const int64_t end = begin + kChunk < t.count ? begin + kChunk : t.count;
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      const float g = t.grad[i];
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

int64_t AdamCudaChunks(int64_t count) { return (count + kChunk - 1) / kChunk; }

const char* LaunchAdam(const AdamCudaTensor* tensors, int num_tensors, int64_t total_chunks,
                       const AdamStep& step, StreamHandle stream) {
  if (total_chunks == 0) return nullptr;
  const int blocks = static_cast<int>(total_chunks < kMaxBlocks ? total_chunks : kMaxBlocks);
  AdamKernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(tensors, num_tensors,
                                                                         total_chunks, step);
  return LastError();
}

const char* LaunchAdamFromHost(const AdamCudaTensor* tensors, int num_tensors,
                               AdamCudaTensor* device_list, const AdamStep& step,
                               StreamHandle stream) {
  std::vector<AdamCudaTensor> list(tensors, tensors + num_tensors);
  int64_t chunks = 0;
  for (AdamCudaTensor& tensor : list) {
    tensor.first_chunk = chunks;
    chunks += AdamCudaChunks(tensor.count);
  }
  if (chunks == 0) return nullptr;
  // From pageable memory the copy is staged before cudaMemcpyAsync returns,
  // so `list` may go; the kernel after it on the stream sees the list.
  if (const char* error =
          ErrorText(cudaMemcpyAsync(device_list, list.data(), list.size() * sizeof(AdamCudaTensor),
                                    cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)))) {
    return error;
  }
  return LaunchAdam(device_list, num_tensors, chunks, step, stream);
}

}  // namespace tfm
