// Registers residual_layer_norm's CUDA kernels (linked only in builds with
// CUDA): f32, f16 and bf16 (x, h, h_bias, gain, bias, out, sum and the gradients
// of one dtype; mean and rstd f32).
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/layer_norm/layer_norm_kernel_args.h"
#include "ops/residual_layer_norm/residual_layer_norm_cuda.h"
#include "ops/residual_layer_norm/residual_layer_norm_kernel_args.h"

namespace tfm {
namespace {

ResidualDropoutLaunch ToLaunch(const ResidualDropoutArgs& args) {
  return ResidualDropoutLaunch{args.scaling.p > 0.0, args.scaling.threshold, args.scaling.scale,
                               args.state.seed,      args.state.stream,      args.state.offset};
}

// Serves residual_layer_norm and residual_bias_layer_norm.
template <typename T>
absl::Status ResidualLayerNormCuda(KernelContext& context) {
  const ResidualLayerNormInputs in = ReadResidualLayerNormInputs(context);
  TFM_ASSIGN_OR_RETURN(const ResidualDropoutArgs dropout, ReadResidualDropoutArgs(context));
  TFM_ASSIGN_OR_RETURN(const double eps, LayerNormEps(context));
  const DType dtype = in.x.dtype();
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * sum, context.AllocateOutput(1, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * mean, context.AllocateOutput(2, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * rstd, context.AllocateOutput(3, DType::kF32));
  return CudaLaunchStatus(
      context, LaunchResidualLayerNorm<T>(
                   in.x.data<T>(), in.h.data<T>(),
                   in.h_bias != nullptr ? in.h_bias->data<T>() : nullptr, in.gain.data<T>(),
                   in.bias.data<T>(), NumRows(in.x.shape()), in.x.dim(-1),
                   static_cast<float>(eps), ToLaunch(dropout), out->data<T>(), sum->data<T>(),
                   mean->data<float>(), rstd->data<float>(), context.stream()));
}

template <typename T>
absl::Status ResidualLayerNormBackwardCuda(KernelContext& context) {
  const Tensor& sum = context.input(1);
  TFM_ASSIGN_OR_RETURN(const ResidualDropoutArgs dropout, ReadResidualDropoutArgs(context));
  TFM_ASSIGN_OR_RETURN(const bool has_h_bias, HasHBias(context));
  const int64_t d = sum.dim(-1);
  const int64_t rows = NumRows(sum.shape());
  const DType dtype = sum.dtype();
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * dh, context.AllocateOutput(1, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * dgain, context.AllocateOutput(2, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(3, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor * dh_bias, context.AllocateOutput(4, dtype));
  TFM_ASSIGN_OR_RETURN(Tensor workspace,
                       Tensor::Empty({ResidualLayerNormBackwardWorkspaceFloats(rows, d)},
                                     DType::kF32, context.device(), context.stream()));
  return CudaLaunchStatus(
      context, LaunchResidualLayerNormBackward<T>(
                   context.input(0).data<T>(), sum.data<T>(), context.input(2).data<T>(),
                   context.input(3).data<float>(), context.input(4).data<float>(), rows, d,
                   ToLaunch(dropout), dx->data<T>(), dh->data<T>(), dgain->data<T>(),
                   dbias->data<T>(), has_h_bias ? dh_bias->data<T>() : nullptr,
                   workspace.data<float>(), context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("residual_layer_norm", DeviceType::kCUDA, ResidualLayerNormCuda, float,
                           Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("residual_bias_layer_norm", DeviceType::kCUDA, ResidualLayerNormCuda,
                           float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("residual_layer_norm_backward", DeviceType::kCUDA,
                           ResidualLayerNormBackwardCuda, float, Half, BFloat16);

}  // namespace
}  // namespace tfm
