// Registers ensemble_combine's CUDA kernel (linked only in builds with CUDA).
#include <vector>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/ensemble_combine/ensemble_combine_cuda.h"

namespace tfm {
namespace {

absl::Status EnsembleCombineCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const bool probability_mean,
                       context.attrs().GetOr<bool>("probability_mean", false));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  std::vector<const float*> members;
  for (int k = 0; k < context.list_size(); ++k) {
    members.push_back(context.list_input(k, 0).data<float>());
  }
  return CudaLaunchStatus(
      context,
      LaunchEnsembleCombine(members.data(), static_cast<int>(members.size()), out->num_elements(),
                            probability_mean, out->data<float>(), context.stream()));
}

TFM_REGISTER_KERNEL("ensemble_combine", DeviceType::kCUDA, DType::kF32, EnsembleCombineCuda);

}  // namespace
}  // namespace tfm
