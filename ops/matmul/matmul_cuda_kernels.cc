// CUDA kernels of matmul (linked only in builds with CUDA): every product is
// one strided-batched cuBLASLt GEMM over all batch entries.
#include <array>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cuda_op.h"
#include "ops/matmul/matmul_kernel_args.h"

namespace tfm {
namespace {

absl::Status MatMulCuda(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, d.out_shape, context.dtype()));
  return RunGemmCuda(context, {.trans_a = d.transpose_a,
                               .trans_b = d.transpose_b,
                               .m = d.m,
                               .n = d.n,
                               .k = d.k,
                               .a = a.raw_data(),
                               .b = b.raw_data(),
                               .c = out->raw_data(),
                               .batch = d.batch,
                               .stride_a = d.m * d.k,
                               .stride_b = d.k * d.n})
      .status();
}

absl::Status MatMulBackwardCuda(KernelContext& context) {
  const Tensor& a = context.input(1);
  const Tensor& b = context.input(2);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor * da, context.AllocateOutput(0, a.shape(), context.dtype()));
  TFM_ASSIGN_OR_RETURN(Tensor * db, context.AllocateOutput(1, b.shape(), context.dtype()));
  Tensor* grads[] = {da, db};
  const std::array<MatMulGradProduct, 2> products = MatMulGradProducts(d);
  for (int g = 0; g < 2; ++g) {
    const MatMulGradProduct& p = products[g];
    TFM_RETURN_IF_ERROR(
        RunGemmCuda(context, {.trans_a = p.trans_first,
                              .trans_b = p.trans_second,
                              .m = p.m,
                              .n = p.n,
                              .k = p.k,
                              .a = context.input(static_cast<int>(p.first)).raw_data(),
                              .b = context.input(static_cast<int>(p.second)).raw_data(),
                              .c = grads[g]->raw_data(),
                              .batch = d.batch,
                              .stride_a = MatMulEntrySize(d, p.first),
                              .stride_b = MatMulEntrySize(d, p.second)})
            .status());
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNELS("matmul", DeviceType::kCUDA, MatMulCuda, DType::kF32, DType::kBF16,
                     DType::kF16);
TFM_REGISTER_KERNELS("matmul_backward", DeviceType::kCUDA, MatMulBackwardCuda, DType::kF32,
                     DType::kBF16, DType::kF16);

}  // namespace
}  // namespace tfm
