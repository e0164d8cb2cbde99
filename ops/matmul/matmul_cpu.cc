// CPU kernels of matmul: every product is one OpenBLAS GEMM per batch entry,
// threaded as ops/matmul/gemm_cpu.h decides.
#include <array>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/matmul/matmul_kernel_args.h"

namespace tfm {
namespace {

absl::Status MatMulCpu(KernelContext& context) {
  const Tensor& a = context.input(0);
  const Tensor& b = context.input(1);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, d.out_shape, DType::kF32));
  BatchedGemmCpu(d.batch, d.transpose_a, d.transpose_b, d.m, d.n, d.k, a.data<float>(),
                 d.m * d.k, b.data<float>(), d.k * d.n, 0.0f, out->data<float>(), d.m * d.n);
  return absl::OkStatus();
}

absl::Status MatMulBackwardCpu(KernelContext& context) {
  const Tensor& a = context.input(1);
  const Tensor& b = context.input(2);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  TFM_ASSIGN_OR_RETURN(Tensor da, Tensor::Empty(a.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor db, Tensor::Empty(b.shape(), DType::kF32));
  context.SetOutput(0, da);
  context.SetOutput(1, db);
  const std::array<MatMulGradProduct, 2> products = MatMulGradProducts(d);
  float* grads[2] = {da.data<float>(), db.data<float>()};
  // Entry i of an operand of the products.
  const auto entry = [&](MatMulGradProduct::Operand operand, int64_t i) {
    return context.input(static_cast<int>(operand)).data<float>() + i * MatMulEntrySize(d, operand);
  };
  // Both products of an entry back to back, while its dC (read by both) is
  // still in cache; entries spread over the pool as BatchedGemmCpu's would.
  ForEachGemmBatch(d.batch, d.m * d.n * d.k, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int g = 0; g < 2; ++g) {
        const MatMulGradProduct& p = products[g];
        GemmCpu(p.trans_first, p.trans_second, p.m, p.n, p.k, entry(p.first, i), entry(p.second, i),
                0.0f, grads[g] + i * p.m * p.n);
      }
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("matmul", DeviceType::kCPU, DType::kF32, MatMulCpu);
TFM_REGISTER_KERNEL("matmul_backward", DeviceType::kCPU, DType::kF32, MatMulBackwardCpu);

}  // namespace
}  // namespace tfm
