// GemmCuda for the CUDA kernels of ops: fills in what the kernel's context
// says (op name, GPU, dtype, stream), so that a kernel states only its
// product, e.g.
//   RunGemmCuda(context, {.trans_b = true, .m = rows, .n = out, .k = in,
//                         .a = x.raw_data(), .b = w.raw_data(), .c = y});
#ifndef TFM_OPS_MATMUL_GEMM_CUDA_OP_H_
#define TFM_OPS_MATMUL_GEMM_CUDA_OP_H_

#include "absl/status/statusor.h"
#include "core/op_registry.h"
#include "ops/matmul/gemm_cuda.h"

namespace tfm {

// As GemmCuda (true when done, false when an asked epilogue cannot be
// fused), on the context's GPU and stream, with its dtype for every operand.
inline absl::StatusOr<bool> RunGemmCuda(const KernelContext& context, GemmCudaProblem problem) {
  problem.op = context.def().name.c_str();
  problem.device = context.device().index;
  problem.dtype = context.dtype();
  return GemmCuda(problem, context.stream());
}

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_CUDA_OP_H_
