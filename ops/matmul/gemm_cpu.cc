#include "ops/matmul/gemm_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <climits>

#include "core/check.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

// OpenBLAS runs a product single-threaded below m*n*k = 65536 * 4
// (SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD); below that our pool
// parallelises across the batch instead (attention's many small heads).
constexpr int64_t kSingleThreadedBlasWork = 65536 * 4;

}  // namespace

void GemmCpu(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // An empty sum; BLAS implementations disagree on lda here.
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  TFM_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX, "GEMM extent exceeds blasint");
  const blasint lda = static_cast<blasint>(trans_a ? m : k);
  const blasint ldb = static_cast<blasint>(trans_b ? k : n);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a, lda, b, ldb, beta, c,
              static_cast<blasint>(n));
}

void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c) {
  const auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      GemmCpu(trans_a, trans_b, m, n, k, a + i * stride_a, b + i * stride_b, beta,
              c + i * stride_c);
    }
  };
  if (batch > 1 && m * n * k < kSingleThreadedBlasWork) {
    ThreadPool::Default()->ParallelFor(batch, 1, run);
  } else {
    run(0, batch);
  }
}

const char* BlasConfig() { return openblas_get_config(); }

}  // namespace tfm
