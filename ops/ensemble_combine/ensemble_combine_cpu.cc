// CPU kernel of ensemble_combine: element by element, members in order (the
// sums' order is the CUDA kernel's too), elements spread over the threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"

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
  constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
  context.thread_pool()->ParallelFor(out->num_elements(), 16384, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (!probability_mean) {
        float sum = 0;
        for (int k = 0; k < count; ++k) sum += inputs[k][i];
        combined[i] = sum * inverse_count;
        continue;
      }
      float largest = inputs[0][i];
      for (int k = 1; k < count; ++k) largest = std::max(largest, inputs[k][i]);
      if (largest == kMinusInfinity) {
        combined[i] = kMinusInfinity;  // Every member rules the token out.
        continue;
      }
      float sum = 0;
      for (int k = 0; k < count; ++k) sum += std::exp(inputs[k][i] - largest);
      combined[i] = largest + std::log(sum) - log_count;
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("ensemble_combine", DeviceType::kCPU, DType::kF32, EnsembleCombineCpu);

}  // namespace
}  // namespace tfm
