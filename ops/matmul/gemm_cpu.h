// Row-major single-precision GEMM on the host through OpenBLAS (cblas), the
// one place where CPU kernels multiply matrices. linear and matmul both call
// it, so BLAS selection and threading policy live here only.
#ifndef TFM_OPS_MATMUL_GEMM_CPU_H_
#define TFM_OPS_MATMUL_GEMM_CPU_H_

#include <cstdint>

namespace tfm {

// C[m, n] = op(A) op(B) + beta * C, where op(A) is [m, k] and op(B) is
// [k, n]; A is stored [m, k] (or [k, m] if trans_a), B [k, n] (or [n, k] if
// trans_b), all dense row-major. beta == 0 ignores C's old contents (NaNs
// included), as BLAS specifies. Any extent may be 0.
void GemmCpu(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float beta, float* c);

// `batch` independent GemmCpu products whose operands lie `stride_a`,
// `stride_b` and `stride_c` elements apart (stride 0 reuses one operand).
// Small products run in parallel on ThreadPool::Default(), one BLAS call per
// thread; large ones run one after another, each threaded by OpenBLAS.
void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c);

// OpenBLAS's build description ("OpenBLAS 0.3.21 ... Haswell ..."): tests
// assert that the optimised library, not the reference BLAS, is linked.
const char* BlasConfig();

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_CPU_H_
