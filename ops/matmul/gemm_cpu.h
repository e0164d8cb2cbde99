// Row-major single-precision GEMM on the host through OpenBLAS (cblas), the
// one place where CPU kernels multiply matrices. linear, matmul and
// tied_projection call it, so BLAS selection and threading policy live here
// only.
//
// Threading: one large product is threaded by OpenBLAS itself (its threads
// and our ThreadPool take turns, never running at once). A batch of smaller
// products runs on ThreadPool::Default() instead, one single-threaded BLAS
// call per product, with OpenBLAS held to one thread meanwhile so that the
// two pools never oversubscribe the cores.
#ifndef TFM_OPS_MATMUL_GEMM_CPU_H_
#define TFM_OPS_MATMUL_GEMM_CPU_H_

#include <cstdint>
#include <functional>

namespace tfm {

// C[m, n] = op(A) op(B) + beta * C, where op(A) is [m, k] and op(B) is
// [k, n]; A is stored [m, k] (or [k, m] if trans_a), B [k, n] (or [n, k] if
// trans_b), all dense row-major. beta == 0 ignores C's old contents (NaNs
// included), as BLAS specifies. Any extent may be 0.
void GemmCpu(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float beta, float* c);

// `batch` independent GemmCpu products whose operands lie `stride_a`,
// `stride_b` and `stride_c` elements apart (stride 0 reuses one operand;
// then stride_c must not be 0). Threaded as ForEachGemmBatch decides.
void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c);

// Runs fn(begin, end) over chunks covering [0, batch), where fn issues the
// GemmCpu products of batch entries begin..end-1, independent of other
// entries, each about `work` = m * n * k multiply-adds. Spreads the entries
// over ThreadPool::Default() (BLAS single-threaded) when that balances, else
// runs them in order and lets OpenBLAS thread each product. Lets a kernel
// that needs several products per entry (matmul's backward) keep them
// together while an entry's operands are in cache.
void ForEachGemmBatch(int64_t batch, int64_t work,
                      const std::function<void(int64_t, int64_t)>& fn);

// OpenBLAS's build description ("OpenBLAS 0.3.21 ... Haswell ..."): tests
// assert that the optimised library, not the reference BLAS, is linked.
const char* BlasConfig();

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_CPU_H_
