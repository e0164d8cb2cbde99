// CUDA kernels of linear (linked only in builds with CUDA): each product is
// one cuBLASLt GEMM over the flattened rows of x, with the bias added by the
// GEMM's epilogue and its gradient summed by the dW GEMM's where cuBLASLt can
// fuse them, else by the kernels of linear_cuda.h.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cuda_launch_status.h"
#include "ops/linear/linear_cuda.h"
#include "ops/matmul/gemm_cuda_op.h"
#include "ops/relu/relu_cuda.h"

namespace tfm {
namespace {

template <typename T>
absl::Status LinearCuda(KernelContext& context) {
  const Tensor& x = context.input(0);
  const Tensor& weight = context.input(1);
  const int64_t in = weight.dim(1), out_features = weight.dim(0);
  const int64_t rows = NumRows(x.shape());
  // linear_no_bias may keep its f32 sums (LinearToF32).
  TFM_ASSIGN_OR_RETURN(const bool f32_out, context.attrs().GetOr<bool>("f32_out", false));
  TFM_ASSIGN_OR_RETURN(Tensor * out,
                       context.AllocateOutput(0, f32_out ? DType::kF32 : context.dtype()));
  // out[rows, out] = x[rows, in] W^T.
  GemmCudaProblem product = {.trans_b = true,
                             .m = rows,
                             .n = out_features,
                             .k = in,
                             .a = x.raw_data(),
                             .b = weight.raw_data(),
                             .c = out->raw_data()};
  product.c_f32 = f32_out;
  TFM_ASSIGN_OR_RETURN(const bool relu, context.attrs().GetOr<bool>("relu", false));
  const auto relu_in_place = [&]() -> absl::Status {
    if (!relu) return absl::OkStatus();
    // relu's own kernel, in place (each element is read before it is written).
    return CudaLaunchStatus(context, LaunchRelu(out->data<T>(), out->data<T>(),
                                                out->num_elements(), context.stream()));
  };
  if (context.num_inputs() == 3) {
    product.bias = context.input(2).raw_data();
    // The bias and the ReLU in the epilogue; else the bias alone there.
    for (const GemmCudaEpilogue epilogue :
         {relu ? GemmCudaEpilogue::kBiasRelu : GemmCudaEpilogue::kBias, GemmCudaEpilogue::kBias}) {
      product.epilogue = epilogue;
      TFM_ASSIGN_OR_RETURN(const bool fused, RunGemmCuda(context, product));
      if (fused) {
        return epilogue == GemmCudaEpilogue::kBiasRelu ? absl::OkStatus() : relu_in_place();
      }
      if (!relu) break;
    }
    // Start every row at the bias and let the GEMM accumulate onto it: one
    // rounding of the sum, as with the epilogue.
    TFM_RETURN_IF_ERROR(
        CudaLaunchStatus(context, LaunchBroadcastRow(context.input(2).data<T>(), rows, out_features,
                                                     out->data<T>(), context.stream())));
    product.epilogue = GemmCudaEpilogue::kNone;
    product.bias = nullptr;
    product.accumulate = true;
  }
  TFM_RETURN_IF_ERROR(RunGemmCuda(context, product).status());
  return relu_in_place();
}

template <typename T>
absl::Status LinearBackwardCuda(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& x = context.input(1);
  const Tensor& weight = context.input(2);
  TFM_ASSIGN_OR_RETURN(const bool has_bias, context.attrs().GetOr<bool>("bias", true));
  const int64_t in = weight.dim(1), out_features = weight.dim(0);
  const int64_t rows = NumRows(x.shape());
  // linear_backward_adding: dx goes into its dx_sum (the GEMM accumulates).
  const bool adding = context.num_inputs() == 4;
  Tensor dx_sum;
  void* dx = nullptr;
  if (adding) {
    dx_sum = context.in_place_input(3);
    dx = dx_sum.raw_data();
  } else {
    TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, context.dtype()));
    dx = out->raw_data();
  }
  TFM_ASSIGN_OR_RETURN(Tensor * dweight, context.AllocateOutput(1, context.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * dbias, context.AllocateOutput(2, context.dtype()));
  // dx[rows, in] (+)= dout[rows, out] W[out, in].
  TFM_RETURN_IF_ERROR(RunGemmCuda(context, {.m = rows,
                                            .n = in,
                                            .k = out_features,
                                            .a = dout.raw_data(),
                                            .b = weight.raw_data(),
                                            .c = dx,
                                            .accumulate = adding})
                          .status());
  if (adding) context.SetOutput(0, dx_sum);
  // dW[out, in] = dout^T x; db[out], the sum of dout's rows, is the sum over
  // this product's k of op(A) = dout^T.
  GemmCudaProblem dweight_product = {.trans_a = true,
                                     .m = out_features,
                                     .n = in,
                                     .k = rows,
                                     .a = dout.raw_data(),
                                     .b = x.raw_data(),
                                     .c = dweight->raw_data()};
  if (has_bias) {
    dweight_product.epilogue = GemmCudaEpilogue::kBiasGradientOfA;
    dweight_product.bias_gradient = dbias->raw_data();
  }
  TFM_ASSIGN_OR_RETURN(const bool done, RunGemmCuda(context, dweight_product));
  if (done) return absl::OkStatus();
  dweight_product.epilogue = GemmCudaEpilogue::kNone;
  dweight_product.bias_gradient = nullptr;
  TFM_RETURN_IF_ERROR(RunGemmCuda(context, dweight_product).status());
  return CudaLaunchStatus(context, LaunchSumRows(dout.data<T>(), rows, out_features,
                                                 dbias->data<T>(), context.stream()));
}

TFM_REGISTER_TYPED_KERNELS("linear", DeviceType::kCUDA, LinearCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("linear_no_bias", DeviceType::kCUDA, LinearCuda, float, Half, BFloat16);
TFM_REGISTER_TYPED_KERNELS("linear_backward", DeviceType::kCUDA, LinearBackwardCuda, float, Half,
                           BFloat16);
TFM_REGISTER_TYPED_KERNELS("linear_backward_adding", DeviceType::kCUDA, LinearBackwardCuda, float,
                           Half, BFloat16);

}  // namespace
}  // namespace tfm
