// CUDA kernel of ensemble_combine: a grid-stride loop over the elements,
// the members' pointers passed by value, each element combined by the CPU
// kernel's rule (CombineMembers).
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda_elementwise.cuh"
#include "ops/ensemble_combine/combine_members.h"
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
    combined[i] = CombineMembers([&](int k) { return members.p[k][i]; }, count,
                                 probability_mean, inverse_count, log_count);
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
