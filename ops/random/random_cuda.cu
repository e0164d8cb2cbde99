// CUDA kernels of random_uniform and random_normal: each thread computes one
// Philox block and writes its 4 elements, exactly as the CPU fill does.
#include <cuda_runtime.h>

#include "core/philox.h"
#include "ops/random/random_cuda.h"

namespace tfm {
namespace {

template <bool kNormal>
__global__ void RandomKernel(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                             uint64_t offset, float a, float b) {
  const int64_t num_blocks = (count + 3) / 4;
  for (int64_t block_index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       block_index < num_blocks; block_index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const philox::Uint4 block = philox::Block(seed, stream_id, offset + block_index);
    for (int lane = 0; lane < 4; ++lane) {
      const int64_t i = block_index * 4 + lane;
      if (i >= count) break;
      if (kNormal) {
        const int first = lane & ~1;
        const float u1 = philox::ToUniformPositive(philox::Lane(block, first));
        const float u2 = philox::ToUniform(philox::Lane(block, first + 1));
        const float radius = sqrtf(-2.0f * logf(u1));
        const float angle = 6.2831853071795864769f * u2;
        const float trig = (lane & 1) ? sinf(angle) : cosf(angle);
        out[i] = __fadd_rn(a, __fmul_rn(__fmul_rn(b, radius), trig));
      } else {
        // __fmul_rn/__fadd_rn: nvcc would contract a + (b - a) * u into
        // one FMA, rounding once where the CPU (baseline x86-64) rounds
        // twice, and the numbers would differ in the last bit.
        out[i] = __fadd_rn(a, __fmul_rn(b - a, philox::ToUniform(philox::Lane(block, lane))));
      }
    }
  }
}

template <bool kNormal>
const char* Launch(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                   uint64_t offset, float a, float b, StreamHandle stream) {
  if (count == 0) return nullptr;
  constexpr int kThreads = 256;
  const int64_t num_blocks = (count + 3) / 4;
  const int64_t grid = (num_blocks + kThreads - 1) / kThreads;
  RandomKernel<kNormal><<<static_cast<int>(grid < 65535 * 8 ? grid : 65535 * 8), kThreads, 0,
                          static_cast<cudaStream_t>(stream)>>>(out, count, seed, stream_id,
                                                               offset, a, b);
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace

const char* LaunchRandomUniform(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                                uint64_t offset, float low, float high, StreamHandle stream) {
  return Launch<false>(out, count, seed, stream_id, offset, low, high, stream);
}

const char* LaunchRandomNormal(float* out, int64_t count, uint64_t seed, uint64_t stream_id,
                               uint64_t offset, float mean, float stddev, StreamHandle stream) {
  return Launch<true>(out, count, seed, stream_id, offset, mean, stddev, stream);
}

}  // namespace tfm
