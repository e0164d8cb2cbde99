#include "ops/matmul/gemm_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// The reference BLAS would be correct but ~50x slower, an SSE fallback ~5x.
TEST(GemmCpuTest, BlasIsOpenBlasWithKernelsForThisCpu) {
  const std::string summary = BlasKernelSummary();
  EXPECT_NE(summary.find("OpenBLAS"), std::string::npos) << summary;
  EXPECT_FALSE(BlasUsesGenericKernels()) << summary;
}

TEST(GemmCpuTest, EveryTransposeAndEmptyExtents) {
  // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1], [1, 1]]: AB = [[4, 5], [10, 11]].
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, a_t = {1, 4, 2, 5, 3, 6};
  const std::vector<float> b = {1, 0, 0, 1, 1, 1}, b_t = {1, 0, 1, 0, 1, 1};
  const std::vector<float> expected = {4, 5, 10, 11};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      std::vector<float> c(4, 7.0f);
      GemmCpu(ta, tb, 2, 2, 3, (ta ? a_t : a).data(), (tb ? b_t : b).data(), 0.0f, c.data());
      EXPECT_EQ(c, expected) << ta << tb;
    }
  }
  std::vector<float> c(4, 7.0f);
  GemmCpu(false, false, 2, 2, 0, nullptr, nullptr, 0.0f, c.data());
  EXPECT_EQ(c, std::vector<float>(4, 0.0f));
  GemmCpu(false, false, 0, 2, 3, nullptr, b.data(), 0.0f, nullptr);
}

TEST(GemmCpuTest, BatchedWithSharedOperandAndAccumulation) {
  const std::vector<float> a = {1, 2, 3, 4};  // Two 1x2 rows: [1, 2] and [3, 4].
  const std::vector<float> b = {1, 1};        // One shared 2x1 column.
  std::vector<float> c = {10, 20};
  BatchedGemmCpu(2, false, false, 1, 1, 2, a.data(), 2, b.data(), 0, 1.0f, c.data(), 1);
  EXPECT_EQ(c, (std::vector<float>{13, 27}));
}

// Reference product in double: C = op(A) op(B).
std::vector<float> NaiveGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                             const float* b) {
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        sum += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
               (tb ? b[j * k + p] : b[p * n + j]);
      }
      c[i * n + j] = static_cast<float>(sum);
    }
  }
  return c;
}

std::vector<float> Filled(int64_t size, int seed) {
  std::vector<float> values(size);
  for (int64_t i = 0; i < size; ++i) values[i] = static_cast<float>((i * 37 + seed * 11) % 19) - 9;
  return values;
}

// Products above the split threshold: an even batch runs whole products on
// the pool, an odd small batch runs in order with each product split into
// panels. Both must give every entry its own product.
TEST(GemmCpuTest, BatchedMediumProductsOnEitherPath) {
  const int64_t m = 160, n = 130, k = 105;  // 2.2M multiply-adds each: two panels.
  for (int64_t batch : {2, 3, 8}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::vector<float> a = Filled(batch * m * k, 1), b = Filled(batch * k * n, 2);
        std::vector<float> c(batch * m * n, std::nanf(""));
        BatchedGemmCpu(batch, ta, tb, m, n, k, a.data(), m * k, b.data(), k * n, 0.0f, c.data(),
                       m * n);
        for (int64_t i = 0; i < batch; ++i) {
          const std::vector<float> expected =
              NaiveGemm(ta, tb, m, n, k, a.data() + i * m * k, b.data() + i * k * n);
          // Small integers: every partial sum is exact in float.
          EXPECT_TRUE(std::equal(expected.begin(), expected.end(), c.begin() + i * m * n))
              << "batch " << batch << " entry " << i << " ta " << ta << " tb " << tb;
        }
      }
    }
  }
}

// Every path of one product: split into row panels (m >= n), column panels
// (n > m), unsplit, and the matrix-vector paths for one row or one column;
// each with every transpose, beta 0 over NaNs and beta 1 accumulating.
TEST(GemmCpuTest, EveryPathEveryTransposeAndBeta) {
  const int64_t shapes[][3] = {{400, 40, 150}, {40, 400, 150}, {3, 5, 4}, {1, 300, 70},
                               {1, 7, 3},     {300, 1, 70},  {5, 1, 9},   {1, 1, 33},
                               {33, 40, 1},   {17, 2000, 9}};
  for (const auto& shape : shapes) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::vector<float> a = Filled(m * k, 3), b = Filled(k * n, 4);
        const std::vector<float> expected = NaiveGemm(ta, tb, m, n, k, a.data(), b.data());
        std::vector<float> c(m * n, std::nanf(""));
        GemmCpu(ta, tb, m, n, k, a.data(), b.data(), 0.0f, c.data());
        EXPECT_EQ(c, expected) << m << "x" << n << "x" << k << " ta " << ta << " tb " << tb;
        GemmCpu(ta, tb, m, n, k, a.data(), b.data(), 1.0f, c.data());  // c = 2 * expected.
        for (float& v : c) v *= 0.5f;
        EXPECT_EQ(c, expected) << "beta 1: " << m << "x" << n << "x" << k << " ta " << ta
                               << " tb " << tb;
      }
    }
  }
}

// A product issued from inside a pool chunk (as attention's per-head loops
// do) runs single-threaded and stays correct.
TEST(GemmCpuTest, SplitProductInsidePoolChunks) {
  const int64_t m = 128, n = 96, k = 64;
  const std::vector<float> a = Filled(m * k, 5), b = Filled(k * n, 6);
  const std::vector<float> expected = NaiveGemm(false, true, m, n, k, a.data(), b.data());
  std::vector<std::vector<float>> results(6, std::vector<float>(m * n));
  ThreadPool::Default()->ParallelFor(6, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      GemmCpu(false, true, m, n, k, a.data(), b.data(), 0.0f, results[i].data());
    }
  });
  for (const auto& c : results) EXPECT_EQ(c, expected);
}

// Values with full mantissas, so that every change in the order of a sum
// shows in the bits.
std::vector<float> Irrational(int64_t size, int seed) {
  std::vector<float> values(size);
  for (int64_t i = 0; i < size; ++i) values[i] = std::sin(0.37f * i + 1.3f * seed);
  return values;
}

// C under a default pool of `threads` threads.
std::vector<float> ProductOnThreads(int threads, bool ta, bool tb, int64_t m, int64_t n,
                                    int64_t k, float beta) {
  ThreadPool pool(threads);
  ThreadPool::ScopedDefault scope(&pool);
  const std::vector<float> a = Irrational(m * k, 1), b = Irrational(k * n, 2);
  std::vector<float> c = Irrational(m * n, 3);
  GemmCpu(ta, tb, m, n, k, a.data(), b.data(), beta, c.data());
  return c;
}

// Training's products (the small Multi30k preset: d_model 256, d_ff 1024,
// vocabulary 8000, ~250 rows): linear forward (beta 1 onto the bias) and
// backward, the tied projection and its backward; and smaller ones. 1, 2
// and 3 threads give the same bits.
TEST(GemmCpuTest, ThreadCountDoesNotChangeTheBits) {
  struct Case {
    bool ta, tb;
    int64_t m, n, k;
    float beta;
  };
  const Case cases[] = {
      {false, true, 250, 256, 256, 1.0f},  {false, true, 250, 1024, 256, 1.0f},
      {false, true, 250, 256, 1024, 1.0f}, {false, false, 250, 256, 256, 0.0f},
      {false, false, 250, 256, 1024, 0.0f}, {false, false, 250, 1024, 256, 0.0f},
      {true, false, 256, 256, 250, 0.0f},  {true, false, 1024, 256, 250, 0.0f},
      {true, false, 256, 1024, 250, 0.0f}, {false, true, 250, 8000, 256, 0.0f},
      {false, false, 250, 256, 8000, 0.0f}, {true, false, 8000, 256, 250, 0.0f},
      {false, false, 96, 130, 70, 0.0f},   {true, true, 130, 96, 70, 1.0f},
      // Around OpenBLAS's small-matrix kernels (up to 10^6 multiply-adds),
      // whose sums run in another order: a product above them must not be
      // cut into panels below them.
      {false, false, 40, 40, 1000, 0.0f},  {false, true, 48, 40, 700, 1.0f},
      {true, false, 40, 64, 600, 0.0f},    {false, false, 100, 100, 150, 0.0f},
      {false, true, 33, 200, 300, 0.0f},   {true, true, 70, 50, 2000, 0.0f},
      {false, false, 100, 100, 450, 0.0f}, {false, true, 33, 8000, 256, 0.0f},
      // Panels of 2^20 multiply-adds, just above the small-matrix kernels.
      {false, true, 32, 256, 256, 0.0f},   {true, false, 256, 32, 256, 1.0f},
  };
  for (const Case& c : cases) {
    const std::vector<float> one = ProductOnThreads(1, c.ta, c.tb, c.m, c.n, c.k, c.beta);
    for (int threads : {2, 3}) {
      const std::vector<float> many = ProductOnThreads(threads, c.ta, c.tb, c.m, c.n, c.k, c.beta);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
          << c.m << "x" << c.n << "x" << c.k << " ta " << c.ta << " tb " << c.tb << " on "
          << threads << " threads";
    }
  }
}

TEST(GemmCpuTest, ForEachGemmBatchVisitsEveryEntryOnce) {
  for (int64_t work : {int64_t{1}, int64_t{1} << 20, int64_t{1} << 30}) {
    for (int64_t batch : {0, 1, 2, 3, 7, 64}) {
      std::vector<int> visits(batch, 0);
      ForEachGemmBatch(batch, work, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++visits[i];
      });
      EXPECT_EQ(visits, std::vector<int>(batch, 1)) << "batch " << batch << " work " << work;
    }
  }
}

}  // namespace
}  // namespace tfm
