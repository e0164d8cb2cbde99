// CUDA kernels of fill: one grid-stride kernel per element width.
#include <cuda_runtime.h>

#include "ops/fill/fill_cuda.h"

namespace tfm {
namespace {

template <typename Word>
__global__ void FillKernel(Word* out, int64_t count, Word value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = value;
  }
}

template <typename Word>
void Launch(void* out, int64_t count, uint64_t pattern, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  const int grid = static_cast<int>(blocks < 65535 * 8 ? blocks : 65535 * 8);
  FillKernel<Word><<<grid, kThreads, 0, stream>>>(static_cast<Word*>(out), count,
                                                  static_cast<Word>(pattern));
}

}  // namespace

const char* LaunchFillPattern(void* out, int64_t count, int element_bytes, uint64_t pattern,
                              StreamHandle stream) {
  if (count == 0) return nullptr;
  cudaStream_t cuda_stream = static_cast<cudaStream_t>(stream);
  switch (element_bytes) {
    case 1:
      Launch<uint8_t>(out, count, pattern, cuda_stream);
      break;
    case 2:
      Launch<uint16_t>(out, count, pattern, cuda_stream);
      break;
    case 4:
      Launch<uint32_t>(out, count, pattern, cuda_stream);
      break;
    case 8:
      Launch<unsigned long long>(out, count, pattern, cuda_stream);
      break;
    default:
      return "unsupported element width";
  }
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace tfm
