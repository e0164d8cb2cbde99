#include "ops/matmul/gemm_cpu.h"

#include <cblas.h>

#include <algorithm>
#include <climits>

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/check.h"
#include "core/thread_pool.h"

namespace tfm {
namespace {

// OpenBLAS runs a product single-threaded below m*n*k = 65536 * 4
// (SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD); below that our pool
// parallelises across the batch without touching OpenBLAS's setting.
constexpr int64_t kSingleThreadedBlasWork = 65536 * 4;

// Above that, a batch still goes to our pool when every thread gets about the
// same number of products: whole products per core beat splitting each
// medium-sized product across the cores (attention's 256 heads of 128 x 128
// x 64 each: OpenBLAS's per-call thread hand-off costs as much as the
// product).
bool SplitsEvenly(int64_t batch, int threads) {
  return batch % threads == 0 || batch >= 4 * threads;
}

// OpenBLAS 0.3.21 has only a process-wide thread count, so it is held at one
// while any batch runs on our pool (two pool threads each asking OpenBLAS for
// two threads would queue on its one worker or oversubscribe the cores). The
// first scope saves the count and the last one restores it, so concurrent
// batches from different callers nest correctly.
ABSL_CONST_INIT absl::Mutex blas_threads_mu(absl::kConstInit);
int blas_scopes ABSL_GUARDED_BY(blas_threads_mu) = 0;
int saved_blas_threads ABSL_GUARDED_BY(blas_threads_mu) = 0;

class SingleThreadedBlasScope {
 public:
  SingleThreadedBlasScope() {
    absl::MutexLock lock(&blas_threads_mu);
    if (blas_scopes++ == 0) {
      saved_blas_threads = openblas_get_num_threads();
      if (saved_blas_threads != 1) openblas_set_num_threads(1);
    }
  }
  ~SingleThreadedBlasScope() {
    absl::MutexLock lock(&blas_threads_mu);
    if (--blas_scopes == 0 && saved_blas_threads != 1) {
      openblas_set_num_threads(saved_blas_threads);
    }
  }
  SingleThreadedBlasScope(const SingleThreadedBlasScope&) = delete;
  SingleThreadedBlasScope& operator=(const SingleThreadedBlasScope&) = delete;
};

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

void ForEachGemmBatch(int64_t batch, int64_t work,
                      const std::function<void(int64_t, int64_t)>& fn) {
  if (batch <= 0) return;
  ThreadPool* pool = ThreadPool::Default();
  const int threads = pool->num_threads();
  if (batch == 1 || threads == 1) {
    fn(0, batch);
  } else if (work < kSingleThreadedBlasWork) {
    pool->ParallelFor(batch, 1, fn);
  } else if (SplitsEvenly(batch, threads)) {
    SingleThreadedBlasScope single_threaded;
    pool->ParallelFor(batch, 1, fn);
  } else {
    fn(0, batch);
  }
}

void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c) {
  TFM_CHECK(batch <= 1 || stride_c != 0, "batched GEMM entries would write one C at once");
  ForEachGemmBatch(batch, m * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      GemmCpu(trans_a, trans_b, m, n, k, a + i * stride_a, b + i * stride_b, beta,
              c + i * stride_c);
    }
  });
}

const char* BlasConfig() { return openblas_get_config(); }

}  // namespace tfm
