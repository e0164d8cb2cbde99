// Registers the positional encoding CUDA kernels (linked only in builds with
// CUDA): f32, f16 and bf16, computed in double and f32.
#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/positional_encoding/positional_encoding_cuda.h"

namespace tfm {
namespace {

absl::Status LaunchStatus(const KernelContext& context, const char* error) {
  if (error == nullptr) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(context.def().name, ": ", error));
}

template <typename T>
absl::Status PositionalEncodingCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * pe, context.AllocateOutput(0, {length, d_model}, context.dtype()));
  return LaunchStatus(context, LaunchPositionalEncoding<T>(pe->data<T>(), length, d_model, offset,
                                                           context.stream()));
}

template <typename T>
absl::Status AddPositionalEncodingCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  return LaunchStatus(
      context, LaunchAddPositionalEncoding<T>(x.data<T>(), out->data<T>(), x.num_elements(),
                                              x.dim(-2), x.dim(-1), offset, context.stream()));
}

#define TFM_REGISTER_POSITIONAL_ENCODING_CUDA(dtype, T)                                            \
  TFM_REGISTER_KERNEL("positional_encoding", DeviceType::kCUDA, dtype, PositionalEncodingCuda<T>); \
  TFM_REGISTER_KERNEL("add_positional_encoding", DeviceType::kCUDA, dtype,                         \
                      AddPositionalEncodingCuda<T>)
TFM_REGISTER_POSITIONAL_ENCODING_CUDA(DType::kF32, float);
TFM_REGISTER_POSITIONAL_ENCODING_CUDA(DType::kF16, Half);
TFM_REGISTER_POSITIONAL_ENCODING_CUDA(DType::kBF16, BFloat16);

}  // namespace
}  // namespace tfm
