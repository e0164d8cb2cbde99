// Registers sum_of_squares' and scale_in_place's CUDA kernels (linked only
// in builds with CUDA): f32 and bf16 gradients.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/grad_norm_cuda.h"
#include "ops/cuda_launch_status.h"

namespace tfm {
namespace {

template <typename T>
absl::Status SumOfSquaresCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  Tensor total = context.in_place_input(1);
  // Doubles, held as 8-byte integers.
  TFM_ASSIGN_OR_RETURN(Tensor workspace,
                       Tensor::Empty({SumOfSquaresWorkspaceDoubles(x.num_elements())}, DType::kI64,
                                     context.device(), context.stream()));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context, LaunchSumOfSquares<T>(x.data<T>(), x.num_elements(),
                                     reinterpret_cast<double*>(workspace.data<int64_t>()),
                                     total.data<float>(), context.stream())));
  context.SetOutput(0, context.input(1));
  return absl::OkStatus();
}

template <typename T>
absl::Status ScaleInPlaceCuda(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(double factor, context.attrs().Get<double>("factor"));
  TFM_RETURN_IF_ERROR(CudaLaunchStatus(
      context,
      LaunchScaleInPlace<T>(context.in_place_input(0).data<T>(), context.input(0).num_elements(),
                            static_cast<float>(factor), context.stream())));
  context.SetOutput(0, context.input(0));
  return absl::OkStatus();
}

TFM_REGISTER_TYPED_KERNELS("sum_of_squares", DeviceType::kCUDA, SumOfSquaresCuda, float, BFloat16);
TFM_REGISTER_TYPED_KERNELS("scale_in_place", DeviceType::kCUDA, ScaleInPlaceCuda, float, BFloat16);

}  // namespace
}  // namespace tfm
