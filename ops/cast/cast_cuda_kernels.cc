// Registers cast's CUDA kernels (linked only in builds with CUDA): from f32,
// f16 and bf16 to each of them.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cast/cast_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

template <typename From, typename To>
absl::Status Launch(KernelContext& context, Tensor* out) {
  const Tensor& x = context.input(0);
  return CudaLaunchStatus(context, LaunchCast<From, To>(x.data<From>(), out->data<To>(),
                                                        x.num_elements(), context.stream()));
}

template <typename From>
absl::Status CastCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::string name, context.attrs().Get<std::string>("dtype"));
  TFM_ASSIGN_OR_RETURN(DType dtype, ParseDType(name));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype));
  switch (dtype) {
    case DType::kF32:
      return Launch<From, float>(context, out);
    case DType::kF16:
      return Launch<From, Half>(context, out);
    case DType::kBF16:
      return Launch<From, BFloat16>(context, out);
    default:
      return context.Error(absl::StrCat("no conversion to ", name));  // Validation stops it.
  }
}

TFM_REGISTER_TYPED_KERNELS("cast", DeviceType::kCUDA, CastCuda, float, Half, BFloat16);

}  // namespace
}  // namespace tfm
