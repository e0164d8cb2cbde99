// CPU kernel of ensemble_combine: element by element (CombineMembers, the
// CUDA kernel's rule too), elements spread over the threads.
#include <cmath>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/ensemble_combine/combine_members.h"

namespace tfm {
namespace {

absl::Status EnsembleCombineCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const bool probability_mean,
                       context.attrs().GetOr<bool>("probability_mean", false));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  const int count = context.list_size();
  std::vector<const float*> inputs;
  for (int k = 0; k < count; ++k) inputs.push_back(context.list_input(k, 0).data<float>());
  float* combined = out->data<float>();
  const float inverse_count = 1.0f / static_cast<float>(count);
  const float log_count = std::log(static_cast<float>(count));
  context.thread_pool()->ParallelFor(out->num_elements(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      combined[i] = CombineMembers([&](int k) { return inputs[k][i]; }, count, probability_mean,
                                   inverse_count, log_count);
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("ensemble_combine", DeviceType::kCPU, DType::kF32, EnsembleCombineCpu);

}  // namespace
}  // namespace tfm
