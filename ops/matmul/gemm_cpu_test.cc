#include "ops/matmul/gemm_cpu.h"

#include <algorithm>
#include <cmath>
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
  const int64_t m = 72, n = 65, k = 70;  // 327600 multiply-adds each.
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
  const int64_t shapes[][3] = {{200, 40, 50}, {40, 200, 50}, {3, 5, 4},   {1, 300, 70},
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
