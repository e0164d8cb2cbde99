// CPU kernels of fill, one per dtype.
#include <algorithm>
#include <type_traits>

#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

template <typename T>
absl::Status FillCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape,
                       context.attrs().Get<std::vector<int64_t>>("shape"));
  TFM_ASSIGN_OR_RETURN(double value, context.attrs().Get<double>("value"));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(
                                         0, Shape(shape.begin(), shape.end()), context.dtype()));
  // Integers convert from the double directly (float would lose digits);
  // the 16-bit floats round from float like every other conversion.
  T converted;
  if constexpr (std::is_integral_v<T>) {
    converted = static_cast<T>(value);
  } else {
    converted = static_cast<T>(static_cast<float>(value));
  }
  T* data = out->data<T>();
  context.thread_pool()->ParallelFor(out->num_elements(), 1 << 16,
                                     [&](int64_t begin, int64_t end) {
                                       std::fill(data + begin, data + end, converted);
                                     });
  return absl::OkStatus();
}

TFM_REGISTER_TYPED_KERNELS("fill", DeviceType::kCPU, FillCpu, float, Half, BFloat16, int32_t,
                           int64_t, int8_t);

}  // namespace
}  // namespace tfm
