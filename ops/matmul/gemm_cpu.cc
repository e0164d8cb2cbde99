#include "ops/matmul/gemm_cpu.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/environment_report.h"
#include "core/thread_pool.h"
#include "ops/blas/openblas_library.h"
#include "ops/matmul/gemm_bf16_cpu.h"

namespace tfm {
namespace {

// Panels are cut at multiples of this many rows or columns, so that each
// stays a whole number of the BLAS kernels' register tiles.
constexpr int64_t kPanelAlign = 16;

// The fewest multiply-adds a panel may have. OpenBLAS sums each element's k
// terms in the same order whatever the m and n of the call, so panels give
// the whole product's bits, and results do not depend on the thread count,
// except where it switches to its small-matrix kernels, which sum in another
// order (sgemm up to 10^6 multiply-adds on SkylakeX and later in 0.3.21): no
// panel is cut that small. gemm_cpu_test checks 1, 2 and 3 threads, at
// this edge too.
constexpr int64_t kMinPanelWork = int64_t{1} << 20;

// The panel extent for splitting `extent` rows (or columns), each worth
// `row_work` multiply-adds, over at most `threads` panels: the most panels
// whose smallest one (the last, after rounding to kPanelAlign) still has
// kMinPanelWork and a whole register tile (a narrower one would be a
// matrix-vector product or another kernel). 0 when the product should not
// be split.
int64_t PanelExtent(int64_t extent, int64_t row_work, int threads) {
  for (int64_t panels = std::min<int64_t>(threads, extent / kPanelAlign); panels >= 2; --panels) {
    const int64_t panel =
        ((extent + panels - 1) / panels + kPanelAlign - 1) / kPanelAlign * kPanelAlign;
    const int64_t last = extent - (extent - 1) / panel * panel;
    if (last >= kPanelAlign && last * row_work >= kMinPanelWork) return panel;
  }
  return 0;
}

// One product with explicit leading dimensions, single-threaded: a
// matrix-vector product when it has one row or one column.
void Product(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 1 || n == 1) {
    // beta == 0 must ignore C's contents, NaNs included; GEMV would scale them.
    if (beta == 0.0f) {
      for (int64_t i = 0; i < m; ++i) std::memset(c + i * ldc, 0, n * sizeof(float));
    }
    if (m == 1) {  // c[n] = op(B)^T-style: each output is a row or column of B dotted with a.
      const int64_t inc_a = trans_a ? lda : 1;
      if (trans_b) {
        blas::Sgemv(false, n, k, 1.0f, b, ldb, a, inc_a, beta, c, 1);
      } else {
        blas::Sgemv(true, k, n, 1.0f, b, ldb, a, inc_a, beta, c, 1);
      }
    } else {  // c[m] = op(A) b.
      const int64_t inc_b = trans_b ? 1 : ldb;
      if (trans_a) {
        blas::Sgemv(true, k, m, 1.0f, a, lda, b, inc_b, beta, c, ldc);
      } else {
        blas::Sgemv(false, m, k, 1.0f, a, lda, b, inc_b, beta, c, ldc);
      }
    }
    return;
  }
  blas::Sgemm(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

const internal::EnvironmentLineRegistrar blas_line("blas", [] { return BlasKernelSummary(); });

}  // namespace

void GemmCpu(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
             const float* b, float beta, float* c) {
  if (m > 0 && n > 0 && k > 0 &&
      CurrentCpuProductPrecision() == CpuProductPrecision::kBf16) {
    GemmBf16({a, trans_a ? m : k, trans_a}, {b, trans_b ? k : n, trans_b}, m, n, k, beta, c,
             ThreadPool::Default());
    return;
  }
  GemmCpuF32(trans_a, trans_b, m, n, k, a, b, beta, c);
}

void GemmCpuF32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // An empty sum; BLAS implementations disagree on lda here.
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    return;
  }
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
  ThreadPool* pool = ThreadPool::Default();
  const int threads = pool->num_threads();
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  const int64_t panel = PanelExtent(extent, (split_rows ? n : m) * k, threads);
  if (panel == 0) {
    Product(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  pool->ParallelFor((extent + panel - 1) / panel, 1, [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      const int64_t begin = p * panel, size = std::min(panel, extent - begin);
      if (split_rows) {  // Rows begin.. of op(A) and C.
        Product(trans_a, trans_b, size, n, k, a + (trans_a ? begin : begin * lda), lda, b, ldb,
                beta, c + begin * ldc, ldc);
      } else {  // Columns begin.. of op(B) and C.
        Product(trans_a, trans_b, m, size, k, a, lda, b + (trans_b ? begin * ldb : begin), ldb,
                beta, c + begin, ldc);
      }
    }
  });
}

void LinearGemmCpu(int64_t rows, int64_t out, int64_t in, const float* x, const float* weight,
                   const float* bias, bool relu, float* y) {
  if (rows == 0 || out == 0) return;
  ThreadPool* pool = ThreadPool::Default();
  if (in > 0 && CurrentCpuProductPrecision() == CpuProductPrecision::kBf16) {
    GemmBf16({x, in, false}, {weight, in, true}, rows, out, in, 0.0f, y, pool,
             GemmEpilogue{bias, relu});
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / out);
  if (bias != nullptr) {
    pool->ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) std::copy(bias, bias + out, y + r * out);
    });
  }
  GemmCpuF32(false, true, rows, out, in, x, weight, bias != nullptr ? 1.0f : 0.0f, y);
  if (relu) {
    pool->ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      ApplyEpilogue(GemmEpilogue{nullptr, true}, begin, end, out, y);
    });
  }
}

void ForEachGemmBatch(int64_t batch, int64_t work,
                      const std::function<void(int64_t, int64_t)>& fn) {
  if (batch <= 0) return;
  ThreadPool* pool = ThreadPool::Default();
  const int threads = pool->num_threads();
  // Whole products per thread balance when the batch divides evenly or is
  // large; small products are never worth splitting anyway. Inside the pool's
  // chunks GemmCpu runs single-threaded (nested loops run inline).
  const bool spread = batch > 1 && threads > 1 &&
                      (work < kGemmSplitWork || batch % threads == 0 || batch >= 4 * threads);
  if (spread) {
    pool->ParallelFor(batch, 1, fn);
  } else {
    fn(0, batch);
  }
}

void BatchedGemmCpu(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                    int64_t k, const float* a, int64_t stride_a, const float* b,
                    int64_t stride_b, float beta, float* c, int64_t stride_c) {
  // An empty C (m or n 0) is dense with stride 0 and written by no entry.
  TFM_CHECK(batch <= 1 || stride_c != 0 || m == 0 || n == 0,
            "batched GEMM entries would write one C at once");
  ForEachGemmBatch(batch, m * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      GemmCpu(trans_a, trans_b, m, n, k, a + i * stride_a, b + i * stride_b, beta,
              c + i * stride_c);
    }
  });
}

std::string BlasKernelSummary() { return blas::KernelSummary(); }

bool BlasUsesGenericKernels() { return blas::Kernels().generic_fallback; }

}  // namespace tfm
