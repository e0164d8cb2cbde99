// Registers layer_norm's CUDA kernels (linked only in builds with CUDA): f32
// f16 and bf16 (x, gain, bias and gradients of one dtype; mean and rstd f32).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/layer_norm/layer_norm_cuda.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"

namespace tfm {
namespace {

template <typename T>
absl::Status LayerNormCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(2, DType::kF32));
  return CudaLaunchStatus(
      context,
      LaunchLayerNorm<T>(x.data<T>(), context.input(1).data<T>(), context.input(2).data<T>(),
                         NumRows(x.shape()), x.dim(-1), static_cast<float>(eps), out->data<T>(),
                         mean->data<float>(), rstd->data<float>(), context.stream()));
}

template <typename T>
absl::Status LayerNormBackwardCuda(KernelContext& context) {
  const Tensor& x = context.input(1);
  const int64_t d = x.dim(-1);
  const int64_t rows = NumRows(x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(1, x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, x.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor workspace,
                       Tensor::Empty({LayerNormBackwardWorkspaceFloats(rows, d)}, DType::kF32,
                                     context.device(), context.stream()));
  return CudaLaunchStatus(
      context,
      LaunchLayerNormBackward<T>(
          context.input(0).data<T>(), x.data<T>(), context.input(2).data<T>(),
          context.input(3).data<float>(), context.input(4).data<float>(), rows, d, dx->data<T>(),
          dgain->data<T>(), dbias->data<T>(), workspace.data<float>(), context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("layer_norm", DeviceType::kCUDA, LayerNormCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("layer_norm_backward", DeviceType::kCUDA, LayerNormBackwardCuda, float,
                           Half, BFloat16);

}  // namespace
}  // namespace tfm
