// Row-major GEMM on a CUDA device through cuBLASLt: the one place where CUDA
// kernels multiply matrices (linear, matmul, tied_projection), as
// gemm_cpu.h is on the host. Plain C++: included by host code.
//
// f32 runs in exact f32 (CUBLAS_COMPUTE_32F), matching the CPU up to the
// order of the sums; TFM_CUDA_TF32=1 in the environment switches f32 to
// TF32 tensor cores instead. bf16 and f16 operands accumulate in f32 on tensor cores
// and round once, at the store. The algorithm of each distinct problem is
// chosen once by cuBLASLt's heuristic and cached, so a steady-state call
// queries nothing and allocates nothing.
#ifndef TFM_OPS_MATMUL_GEMM_CUDA_H_
#define TFM_OPS_MATMUL_GEMM_CUDA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/device.h"
#include "core/dtype.h"

namespace tfm {

// What a GEMM fuses after the product.
enum class GemmCudaEpilogue {
  kNone,
  // C[i, j] = product[i, j] (+ C[i, j]) + bias[j]; bias has n entries.
  kBias,
  // max(0, that): the feed-forward network's first product and its ReLU.
  kBiasRelu,
  // Also writes bias_gradient[i] = sum over k of op(A)[i, k], m entries:
  // the bias gradient when op(A) is a transposed output gradient (linear's
  // dW).
  kBiasGradientOfA,
};

// C[batch][m, n] = op(A) op(B) (+ C if accumulate), all dense row-major, as
// GemmCpu: op(A) is [m, k] (A stored [k, m] if trans_a), op(B) is [k, n] (B
// stored [n, k] if trans_b). The batch entries of A and B lie stride_a and
// stride_b elements apart; C's are dense: [batch, m, n].
struct GemmCudaProblem {
  const char* op = "gemm";    // The calling op, named by error messages.
  int device = 0;             // The GPU that holds every operand.
  DType dtype = DType::kF32;  // Of A, B, C and bias: kF32, kBF16 or kF16.
  // C in f32 whatever `dtype` (16-bit A and B): the f32 sums unrounded.
  // Without an epilogue only.
  bool c_f32 = false;
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  bool accumulate = false;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0;
  GemmCudaEpilogue epilogue = GemmCudaEpilogue::kNone;
  const void* bias = nullptr;     // Read by kBias.
  void* bias_gradient = nullptr;  // Written by kBiasGradientOfA.
};

// Enqueues the product on `stream`. Returns true when done. Returns false,
// having enqueued nothing, only when an epilogue was asked and this problem
// cannot fuse it (no cuBLASLt algorithm for it, an extent is 0, or
// TFM_GEMM_EPILOGUES leaves it out, to measure the difference): the
// caller then runs the product without it and does the epilogue's work
// itself. Any extent may be 0; with k = 0 the product is 0.
absl::StatusOr<bool> GemmCuda(const GemmCudaProblem& problem, StreamHandle stream);

// Whether plans made from now on time the heuristic's best algorithms on
// their problem and keep the fastest (TFM_GEMM_AUTOTUNE=1 by default; never
// in deterministic mode). Plans already made stay.
void SetGemmAutotune(bool on);

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_CUDA_H_
