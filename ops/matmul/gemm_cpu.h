// Row-major single-precision GEMM on the host: the one place where CPU
// kernels multiply matrices (linear, matmul, tied_projection). The BLAS
// (ops/blas/openblas_library.h) runs single-threaded; threading is ours, on
// ThreadPool::Default():
//   - a large product is split into one panel of rows (or columns) per
//     thread, each panel one single-threaded BLAS call, none so small that
//     OpenBLAS would sum it in another order than the whole product (the
//     bits do not depend on the thread count);
//   - a batch of products is spread over the threads, whole products each,
//     when that balances (attention's 256 heads of 128 x 128 x 64);
//   - a product with one row or one column (batch-1 decoding) is a
//     matrix-vector product, never a GEMM that packs a whole matrix for one
//     row.
#ifndef TFM_OPS_MATMUL_GEMM_CPU_H_
#define TFM_OPS_MATMUL_GEMM_CPU_H_

#include <cstdint>
#include <functional>
#include <string>

namespace tfm {

// Below this many multiply-adds (~5 us on one core) a product is not split
// between threads: the hand-off to the pool would cost a noticeable part of
// it. GemmCpu's rule, and packed_linear's.
inline constexpr int64_t kGemmSplitWork = int64_t{1} << 17;

// C[m, n] = op(A) op(B) + beta * C, where op(A) is [m, k] and op(B) is
// [k, n]; A is stored [m, k] (or [k, m] if trans_a), B [k, n] (or [n, k] if
// trans_b), all dense row-major. beta == 0 ignores C's old contents (NaNs
// included), as BLAS specifies. Any extent may be 0. Threaded as above; from
// inside a pool chunk it runs single-threaded.
//
// Under a ScopedCpuProductPrecision of bf16 (gemm_bf16_cpu.h: training's
// train.dtype bf16), A and B are rounded to bf16 and summed in f32.
void GemmCpu(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float beta, float* c);

// y[rows, out] = x[rows, in] W[out, in]^T + bias (broadcast over the rows;
// none if null), then ReLU if `relu` (x <= 0 becomes +0, NaN stays): linear's
// forward, in the product precision as GemmCpu. In f32 the rows start at
// the bias and the GEMM adds onto them (no second pass over y); in bf16 the
// bias and ReLU are applied as each block of y is written.
void LinearGemmCpu(int64_t rows, int64_t out, int64_t in, const float* x, const float* weight,
                   const float* bias, bool relu, float* y);

// GemmCpu in f32 whatever the product precision.
void GemmCpuF32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                const float* b, float beta, float* c);

// `batch` independent GemmCpu products whose operands lie `stride_a`,
// `stride_b` and `stride_c` elements apart (stride 0 reuses one operand;
// then stride_c must not be 0), as one call.
void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c);

// Runs fn(begin, end) over chunks covering [0, batch), where fn issues the
// GemmCpu products of batch entries begin..end-1, independent of other
// entries, each about `work` = m * n * k multiply-adds. Spreads the entries
// over the pool when that balances (each product then single-threaded), else
// runs them in order with each product split over the pool. Lets a kernel
// that needs several products per entry (matmul's backward) keep them
// together while an entry's operands are in cache.
void ForEachGemmBatch(int64_t batch, int64_t work,
                      const std::function<void(int64_t, int64_t)>& fn);

// The BLAS in use: library, version, kernels chosen and why. Printed by
// `--list` and by every benchmark.
std::string BlasKernelSummary();

// True when the BLAS runs kernels narrower than the CPU's vectors (e.g. an
// SSE3 fallback on an AVX-512 machine): benchmarks refuse to run then.
bool BlasUsesGenericKernels();

}  // namespace tfm

#endif  // TFM_OPS_MATMUL_GEMM_CPU_H_
