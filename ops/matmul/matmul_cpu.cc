// CPU kernels of matmul: every product is one OpenBLAS GEMM per batch entry,
// threaded as ops/matmul/gemm_cpu.h decides.
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
  TFM_ASSIGN_OR_RETURN(Tensor da, Tensor::Empty(a.shape(), DType::kF32));
  TFM_ASSIGN_OR_RETURN(Tensor db, Tensor::Empty(b.shape(), DType::kF32));
  context.SetOutput(0, da);
  context.SetOutput(1, db);
  const int64_t a_size = d.m * d.k, b_size = d.k * d.n, c_size = d.m * d.n;
  const float* dc_all = dout.data<float>();
  const float* a_all = a.data<float>();
  const float* b_all = b.data<float>();
  float* da_all = da.data<float>();
  float* db_all = db.data<float>();
  // Both products of an entry back to back, while its dC (read by both) is
  // still in cache; entries spread over the pool as BatchedGemmCpu's would.
  ForEachGemmBatch(d.batch, d.m * d.n * d.k, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* dc = dc_all + i * c_size;
      const float* a_i = a_all + i * a_size;
      const float* b_i = b_all + i * b_size;
      if (!d.transpose_a) {  // dA[m, k] = dC[m, n] op(B)^T.
        GemmCpu(false, !d.transpose_b, d.m, d.k, d.n, dc, b_i, 0.0f, da_all + i * a_size);
      } else {  // dA[k, m] = op(B)[k, n] dC^T.
        GemmCpu(d.transpose_b, true, d.k, d.m, d.n, b_i, dc, 0.0f, da_all + i * a_size);
      }
      if (!d.transpose_b) {  // dB[k, n] = op(A)^T dC.
        GemmCpu(!d.transpose_a, false, d.k, d.n, d.m, a_i, dc, 0.0f, db_all + i * b_size);
      } else {  // dB[n, k] = dC^T op(A).
        GemmCpu(true, d.transpose_a, d.n, d.k, d.m, dc, a_i, 0.0f, db_all + i * b_size);
      }
    }
  });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("matmul", DeviceType::kCPU, DType::kF32, MatMulCpu);
TFM_REGISTER_KERNEL("matmul_backward", DeviceType::kCPU, DType::kF32, MatMulBackwardCpu);

}  // namespace
}  // namespace tfm
