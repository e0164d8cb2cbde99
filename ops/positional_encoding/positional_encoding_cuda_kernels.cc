// Registers the positional encoding CUDA kernels (linked only in builds with
// CUDA): f32, f16 and bf16, computed in double and f32.
#include <algorithm>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/positional_encoding/positional_encoding_cuda.h"

namespace tfm {
namespace {

template <typename T>
absl::Status PositionalEncodingCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(int64_t length, context.attrs().Get<int64_t>("length"));
  TFM_ASSIGN_OR_RETURN(int64_t d_model, context.attrs().Get<int64_t>("d_model"));
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * pe, context.AllocateOutput(0, context.dtype()));
  return CudaLaunchStatus(context, LaunchPositionalEncoding<T>(pe->data<T>(), length, d_model,
                                                               offset, context.stream()));
}

// The adds' table of encodings (AddPositionalEncodingTableFloats), on the
// kernel's stream.
absl::StatusOr<Tensor> EncodingTable(const KernelContext& context, const Tensor& x) {
  return Tensor::Empty(
      {std::max<int64_t>(1, AddPositionalEncodingTableFloats(x.dim(-2), x.dim(-1)))}, DType::kF32,
      context.device(), context.stream());
}

template <typename T>
absl::Status AddPositionalEncodingCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(int64_t offset, context.attrs().GetOr<int64_t>("offset", 0));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor table, EncodingTable(context, x));
  return CudaLaunchStatus(context, LaunchAddPositionalEncoding<T>(
                                       x.data<T>(), out->data<T>(), x.num_elements(), x.dim(-2),
                                       x.dim(-1), offset, table.data<float>(), context.stream()));
}

// The position stays on the device: no host sync, the same launch at every
// step of a captured graph.
template <typename T>
absl::Status AddPositionalEncodingAtCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor table, EncodingTable(context, x));
  return CudaLaunchStatus(
      context, LaunchAddPositionalEncodingAt<T>(x.data<T>(), out->data<T>(), x.num_elements(),
                                                x.dim(-2), x.dim(-1),
                                                context.input(1).data<int32_t>(),
                                                table.data<float>(), context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("positional_encoding", DeviceType::kCUDA, PositionalEncodingCuda, float,
                           Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("add_positional_encoding", DeviceType::kCUDA, AddPositionalEncodingCuda,
                           float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("add_positional_encoding_at", DeviceType::kCUDA,
                           AddPositionalEncodingAtCuda, float, Half, BFloat16);

}  // namespace
}  // namespace tfm
