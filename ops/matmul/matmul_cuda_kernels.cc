// CUDA kernels of matmul (linked only in builds with CUDA): every product is
// one strided-batched cuBLASLt GEMM over all batch entries.
#include <array>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cuda.h"
#include "ops/matmul/matmul_kernel_args.h"

namespace tfm {
namespace {

// The problem of out = op(a) op(b) on every batch entry, in `context`'s
// device, dtype and name.
GemmCudaProblem BatchedProblem(const KernelContext& context, bool trans_a, bool trans_b, int64_t m,
                               int64_t n, int64_t k, int64_t batch, const void* a, int64_t stride_a,
                               const void* b, int64_t stride_b, void* out) {
  GemmCudaProblem problem;
  problem.op = context.def().name.c_str();
  problem.device = context.device().index;
  problem.dtype = context.dtype();
  problem.trans_a = trans_a;
  problem.trans_b = trans_b;
  problem.m = m;
  problem.n = n;
  problem.k = k;
  problem.batch = batch;
  problem.a = a;
  problem.stride_a = stride_a;
  problem.b = b;
  problem.stride_b = stride_b;
  problem.c = out;
  return problem;
}

absl::Status MatMulCuda(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, d.out_shape, context.dtype()));
  return GemmCuda(BatchedProblem(context, d.transpose_a, d.transpose_b, d.m, d.n, d.k, d.batch,
                                 a.raw_data(), d.m * d.k, b.raw_data(), d.k * d.n, out->raw_data()),
                  context.stream())
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
    // Inputs are (dout, a, b), in MatMulGradProduct::Operand's order.
    const Tensor& first = context.input(static_cast<int>(p.first));
    const Tensor& second = context.input(static_cast<int>(p.second));
    TFM_RETURN_IF_ERROR(
        GemmCuda(BatchedProblem(context, p.trans_first, p.trans_second, p.m, p.n, p.k, d.batch,
                                first.raw_data(), MatMulEntrySize(d, p.first), second.raw_data(),
                                MatMulEntrySize(d, p.second), grads[g]->raw_data()),
                 context.stream())
            .status());
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("matmul", DeviceType::kCUDA, DType::kF32, MatMulCuda);
TFM_REGISTER_KERNEL("matmul", DeviceType::kCUDA, DType::kBF16, MatMulCuda);
TFM_REGISTER_KERNEL("matmul_backward", DeviceType::kCUDA, DType::kF32, MatMulBackwardCuda);
TFM_REGISTER_KERNEL("matmul_backward", DeviceType::kCUDA, DType::kBF16, MatMulBackwardCuda);

}  // namespace
}  // namespace tfm
