// Registers the Philox CUDA kernels (linked only in builds with CUDA).
#include "ops/cuda_launch_status.h"
#include "ops/random/random_cuda.h"
#include "ops/random/random_kernel_args.h"

namespace tfm {
namespace {

template <bool kNormal>
absl::Status RandomCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(RandomKernelArgs args, ReadRandomKernelArgs(context, kNormal));
  const auto launch = kNormal ? LaunchRandomNormal : LaunchRandomUniform;
  return CudaLaunchStatus(
      context, launch(args.out->data<float>(), args.out->num_elements(), args.state.seed,
                      args.state.stream, args.state.offset, args.a, args.b, context.stream()));
}

TFM_REGISTER_KERNEL("random_uniform", DeviceType::kCUDA, DType::kF32, RandomCuda<false>);
TFM_REGISTER_KERNEL("random_normal", DeviceType::kCUDA, DType::kF32, RandomCuda<true>);

}  // namespace
}  // namespace tfm
