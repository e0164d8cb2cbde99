// CPU kernels of matmul: every product is one OpenBLAS GEMM per batch entry.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_cpu.h"
#include "ops/matmul/matmul.h"

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

// With C = op(A) op(B) and dC given (per batch entry):
//   dA = dC op(B)^T, stored transposed (= op(B) dC^T) when A is;
//   dB = op(A)^T dC, stored transposed (= dC^T op(A)) when B is.
// Each is again one GEMM whose operand transposes follow from the flags.
absl::Status MatMulBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  const Tensor& a = context.input(1);
  const Tensor& b = context.input(2);
  TFM_ASSIGN_OR_RETURN(MatMulDims d, MatMulDimsOf(a.shape(), b.shape(), context.attrs()));
  // Handles, not AllocateOutput's pointers: those move when the outputs grow.
  TFM_ASSIGN_OR_RETURN(const Tensor da, Tensor::Empty(a.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(const Tensor db, Tensor::Empty(b.shape(), DType::kF32));
  context.SetOutput(0, da);
  context.SetOutput(1, db);
  const int64_t a_size = d.m * d.k, b_size = d.k * d.n, c_size = d.m * d.n;
  const float* dc = dout.data<float>();
  if (!d.transpose_a) {  // dA[m, k] = dC[m, n] op(B)^T.
    BatchedGemmCpu(d.batch, false, !d.transpose_b, d.m, d.k, d.n, dc, c_size, b.data<float>(),
                   b_size, 0.0f, da.data<float>(), a_size);
  } else {  // dA[k, m] = op(B)[k, n] dC^T.
    BatchedGemmCpu(d.batch, d.transpose_b, true, d.k, d.m, d.n, b.data<float>(), b_size, dc,
                   c_size, 0.0f, da.data<float>(), a_size);
  }
  if (!d.transpose_b) {  // dB[k, n] = op(A)^T dC.
    BatchedGemmCpu(d.batch, !d.transpose_a, false, d.k, d.n, d.m, a.data<float>(), a_size, dc,
                   c_size, 0.0f, db.data<float>(), b_size);
  } else {  // dB[n, k] = dC^T op(A).
    BatchedGemmCpu(d.batch, true, d.transpose_a, d.n, d.k, d.m, dc, c_size, a.data<float>(),
                   a_size, 0.0f, db.data<float>(), b_size);
  }
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("matmul", DeviceType::kCPU, DType::kF32, MatMulCpu);
TFM_REGISTER_KERNEL("matmul_backward", DeviceType::kCPU, DType::kF32, MatMulBackwardCpu);

}  // namespace
}  // namespace tfm
