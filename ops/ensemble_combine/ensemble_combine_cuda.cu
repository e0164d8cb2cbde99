// CUDA kernel of ensemble_combine: a grid-stride loop over the elements,
// the members' pointers passed by value, each element's members combined
// in order as the CPU kernel combines them (expf and logf: within an ulp or
// two of the CPU's std::exp and std::log).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_elementwise.cuh"
#include "ops/ensemble_combine/ensemble_combine_cuda.h"

namespace tfm {
namespace {

constexpr int kMaxMembers = 32;  // ensemble_combine.h's kMaxEnsembleMembersCuda.
constexpr int kThreads = 256;

struct Members {
  const float* p[kMaxMembers];
};

__global__ void EnsembleCombineKernel(Members members, int count, int64_t n, bool probability_mean,
                                      float inverse_count, float log_count, float* combined) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (!probability_mean) {
      float sum = 0.0f;
      for (int k = 0; k < count; ++k) sum += members.p[k][i];
      combined[i] = sum * inverse_count;
      continue;
    }
    float largest = members.p[0][i];
    for (int k = 1; k < count; ++k) largest = fmaxf(largest, members.p[k][i]);
    if (largest == -INFINITY) {
      combined[i] = -INFINITY;
      continue;
    }
    float sum = 0.0f;
    for (int k = 0; k < count; ++k) sum += expf(members.p[k][i] - largest);
    combined[i] = largest + logf(sum) - log_count;
  }
}

}  // namespace

const char* LaunchEnsembleCombine(const float* const* members, int count, int64_t n,
                                  bool probability_mean, float* combined, StreamHandle stream) {
  if (count < 1 || count > kMaxMembers) return "ensemble_combine: 1 to 32 members on CUDA";
  if (n == 0) return nullptr;
  Members pointers{};
  for (int k = 0; k < count; ++k) pointers.p[k] = members[k];
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  EnsembleCombineKernel<<<static_cast<unsigned>(blocks < 65535 * 8 ? blocks : 65535 * 8), kThreads,
                          0, static_cast<cudaStream_t>(stream)>>>(
      pointers, count, n, probability_mean, 1.0f / static_cast<float>(count),
      logf(static_cast<float>(count)), combined);
  return cuda_elementwise::LastError();
}

}  // namespace tfm
