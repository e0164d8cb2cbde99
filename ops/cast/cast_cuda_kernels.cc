// Registers cast's CUDA kernels (linked only in builds with CUDA): from f32,
// f16 and bf16 to each of them, for one tensor or a list.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cast/cast_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

// One tensor: the plain kernel; several: one launch over their list.
template <typename From, typename To>
absl::Status Launch(KernelContext& context, DType dtype) {
  const OpCallLayout& layout = context.layout();
  if (context.list_size() == 1) {
    const Tensor& x = context.input(0);
    TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype));
    return CudaLaunchStatus(context, LaunchCast<From, To>(x.data<From>(), out->data<To>(),
                                                          x.num_elements(), context.stream()));
  }
  std::vector<CastCudaTensor> tensors;
  tensors.reserve(context.list_size());
  for (int entry = 0; entry < context.list_size(); ++entry) {
    const Tensor& x = context.list_input(entry, 0);
    TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(layout.output(0, entry), dtype));
    tensors.push_back(CastCudaTensor{x.data<From>(), out->data<To>(), x.num_elements(), 0});
  }
  TFM_ASSIGN_OR_RETURN(Tensor list, DeviceListBuffer<CastCudaTensor>(context, tensors.size()));
  return CudaLaunchStatus(
      context, LaunchCastList<From, To>(tensors.data(), static_cast<int>(tensors.size()),
                                        ListEntries<CastCudaTensor>(list), context.stream()));
}

template <typename From>
absl::Status CastCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::string name, context.attrs().Get<std::string>("dtype"));
  TFM_ASSIGN_OR_RETURN(DType dtype, ParseDType(name));
  switch (dtype) {
    case DType::kF32:
      return Launch<From, float>(context, dtype);
    case DType::kF16:
      return Launch<From, Half>(context, dtype);
    case DType::kBF16:
      return Launch<From, BFloat16>(context, dtype);
    default:
      return context.Error(absl::StrCat("no conversion to ", name));  // Validation stops it.
  }
}

TFM_REGISTER_TYPED_KERNELS("cast", DeviceType::kCUDA, CastCuda, float, Half, BFloat16);

}  // namespace
}  // namespace tfm
