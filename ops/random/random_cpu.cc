// CPU kernels of random_uniform and random_normal (core/rng.h fills).
#include "ops/random/random_kernel_args.h"

namespace tfm {
namespace {

template <bool kNormal>
absl::Status RandomCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(RandomKernelArgs args, ReadRandomKernelArgs(context, kNormal));
  if (kNormal) {
    FillNormalCpu(args.state, args.a, args.b, args.out->span<float>());
  } else {
    FillUniformCpu(args.state, args.a, args.b, args.out->span<float>());
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("random_uniform", DeviceType::kCPU, DType::kF32, RandomCpu<false>);
TFM_REGISTER_KERNEL("random_normal", DeviceType::kCPU, DType::kF32, RandomCpu<true>);

}  // namespace
}  // namespace tfm
