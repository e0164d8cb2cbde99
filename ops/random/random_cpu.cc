// CPU kernels of random_uniform and random_normal (core/rng.h fills).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

template <bool kNormal>
absl::Status RandomCpu(KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, attrs.Get<std::vector<int64_t>>("shape"));
  TFM_ASSIGN_OR_RETURN(PhiloxState state, PhiloxStateFromAttrs(attrs));
  TFM_ASSIGN_OR_RETURN(double a, attrs.Get<double>(kNormal ? "mean" : "low"));
  TFM_ASSIGN_OR_RETURN(double b, attrs.Get<double>(kNormal ? "stddev" : "high"));
  TFM_ASSIGN_OR_RETURN(Tensor * out,
                       context.AllocateOutput(0, Shape(shape.begin(), shape.end()), DType::kF32));
  if (kNormal) {
    FillNormalCpu(state, static_cast<float>(a), static_cast<float>(b), out->span<float>());
  } else {
    FillUniformCpu(state, static_cast<float>(a), static_cast<float>(b), out->span<float>());
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("random_uniform", DeviceType::kCPU, DType::kF32, RandomCpu<false>);
TFM_REGISTER_KERNEL("random_normal", DeviceType::kCPU, DType::kF32, RandomCpu<true>);

}  // namespace
}  // namespace tfm
