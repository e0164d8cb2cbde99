// CPU kernels of linear: one OpenBLAS GEMM per product over the flattened
// rows of x, plus a threaded bias broadcast and the shared bias reduction.
#include <algorithm>

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
  if (has_bias) {
    // Start every row at the bias and let the GEMM accumulate onto it (beta
    // = 1): no second pass over the output.
    const float* bias = context.input(2).data<float>();
    context.thread_pool()->ParallelFor(
        rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_features)),
        [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            std::copy(bias, bias + out_features, y + r * out_features);
          }
        });
  }
  GemmCpu(false, true, rows, out_features, in, x.data<float>(), weight.data<float>(),
          has_bias ? 1.0f : 0.0f, y);
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  if (relu) {
    // As ops/relu: negatives and -0 become +0, NaN stays.
    context.thread_pool()->ParallelFor(
        rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_features)),
        [&](int64_t begin, int64_t end) {
          for (int64_t i = begin * out_features; i < end * out_features; ++i) {
            if (y[i] <= 0.0f) y[i] = 0.0f;
          }
        });
  }
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
