// CPU kernels of cast: each element through float (exact for all three
// dtypes), then rounded to nearest even by the target type's constructor,
// the same rounding as the CUDA kernels' intrinsics.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

template <typename From, typename To>
void ConvertAll(const From* in, To* out, int64_t count, ThreadPool* pool) {
  pool->ParallelFor(count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = To(static_cast<float>(in[i]));
  });
}

template <typename From>
absl::Status CastEntry(KernelContext& context, int entry, DType dtype) {
  const Tensor& x = context.list_input(entry, 0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(context.layout().output(0, entry), dtype));
  const From* in = x.data<From>();
  switch (dtype) {
    case DType::kF32:
      ConvertAll(in, out->data<float>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    case DType::kF16:
      ConvertAll(in, out->data<Half>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    case DType::kBF16:
      ConvertAll(in, out->data<BFloat16>(), x.num_elements(), context.thread_pool());
      return absl::OkStatus();
    default:  // Validation stops it.
      return context.Error(absl::StrCat("no conversion to ", DTypeName(dtype)));
  }
}

template <typename From>
absl::Status CastCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::string name, context.attrs().Get<std::string>("dtype"));
  TFM_ASSIGN_OR_RETURN(DType dtype, ParseDType(name));
  for (int entry = 0; entry < context.list_size(); ++entry) {
    TFM_RETURN_IF_ERROR(CastEntry<From>(context, entry, dtype));
  }
  return absl::OkStatus();
}

TFM_REGISTER_TYPED_KERNELS("cast", DeviceType::kCPU, CastCpu, float, Half, BFloat16);

}  // namespace
}  // namespace tfm
