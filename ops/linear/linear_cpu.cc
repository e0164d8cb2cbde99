// CPU kernels of linear: one GEMM per product over the flattened rows of x
// (ops/matmul/gemm_cpu.h: the forward's bias and ReLU go with its product),
// and the shared bias reduction.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/add/sum_rows_cpu.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace {

absl::Status LinearCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& weight = context.input(1);
  const int64_t in = weight.dim(1), out_features = weight.dim(0);
  const int64_t rows = NumRows(x.shape());
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
  float* y = out->data<float>();
  const bool has_bias = context.num_inputs() == 3;
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  LinearGemmCpu(rows, out_features, in, x.data<float>(), weight.data<float>(),
                has_bias ? context.input(2).data<float>() : nullptr, relu, y);
  return absl::OkStatus();
}

absl::Status LinearBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& x = context.input(1);
  const Tensor& weight = context.input(2);
  TFM_ASSIGN_OR_RETURN(const bool has_bias, context.attrs().GetOr<bool>("bias", true));
  const int64_t in = weight.dim(1), out_features = weight.dim(0);
  const int64_t rows = NumRows(x.shape());
  // linear_backward_adding: dx goes into its dx_sum (beta 1).
  const bool adding = context.num_inputs() == 4;
  Tensor dx_sum;
  float* dx = nullptr;
  if (adding) {
    dx_sum = context.in_place_input(3);
    dx = dx_sum.data<float>();
  } else {
    TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, DType::kF32));
    dx = out->data<float>();
  }
  TFM_ASSIGN_OR_RETURN(Tensor * dweight, context.AllocateOutput(1, DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, DType::kF32));
  // dx[rows, in] (+)= dout[rows, out] W[out, in]; dW[out, in] = dout^T x.
  GemmCpu(false, false, rows, in, out_features, dout.data<float>(), weight.data<float>(),
          adding ? 1.0f : 0.0f, dx);
  if (adding) context.SetOutput(0, dx_sum);
  GemmCpu(true, false, out_features, in, rows, dout.data<float>(), x.data<float>(), 0.0f,
          dweight->data<float>());
  if (has_bias) SumRowsCpu(dout.data<float>(), rows, out_features, dbias->data<float>());
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("linear", DeviceType::kCPU, DType::kF32, LinearCpu);
TFM_REGISTER_KERNEL("linear_no_bias", DeviceType::kCPU, DType::kF32, LinearCpu);
TFM_REGISTER_KERNEL("linear_backward", DeviceType::kCPU, DType::kF32, LinearBackwardCpu);
TFM_REGISTER_KERNEL("linear_backward_adding", DeviceType::kCPU, DType::kF32, LinearBackwardCpu);

}  // namespace
}  // namespace tfm
