#include "ops/blas/openblas_library.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/cpu_features.h"

namespace tfm {
namespace blas {
namespace {

TEST(OpenBlasLibraryTest, ChoosesTheWidestKernelsTheFeaturesAllow) {
  EXPECT_EQ(ChooseCoreType(true, true, true, false).core_type, "Cooperlake");
  EXPECT_EQ(ChooseCoreType(true, true, false, false).core_type, "SkylakeX");
  EXPECT_EQ(ChooseCoreType(true, true, false, true).core_type, "SkylakeX");  // Zen 4.
  EXPECT_EQ(ChooseCoreType(true, false, false, true).core_type, "Zen");
  EXPECT_EQ(ChooseCoreType(true, false, false, false).core_type, "Haswell");
  for (bool amd : {false, true}) {
    EXPECT_EQ(CoreVectorBits(ChooseCoreType(true, true, false, amd).core_type), 512);
    EXPECT_EQ(CoreVectorBits(ChooseCoreType(true, false, false, amd).core_type), 256);
  }
  EXPECT_EQ(CoreVectorBits("Prescott"), 128);
  EXPECT_EQ(CoreVectorBits("haswell"), 256);  // OpenBLAS's names vary in case.
}

// The optimised library, with kernels as wide as this CPU's vectors: the
// failure this guards against is the silent SSE3 fallback.
TEST(OpenBlasLibraryTest, LoadedKernelsMatchThisCpu) {
  const BlasKernels& k = Kernels();
  EXPECT_NE(k.config.find("OpenBLAS"), std::string::npos) << k.config;
  EXPECT_NE(k.library.find("openblas"), std::string::npos) << k.library;
  const CpuFeatures& cpu = HostCpuFeatures();
  EXPECT_EQ(CoreVectorBits(k.core), cpu.avx512 ? 512 : 256) << KernelSummary();
  EXPECT_FALSE(k.generic_fallback) << KernelSummary();
  EXPECT_NE(KernelSummary().find(k.core), std::string::npos);
}

TEST(OpenBlasLibraryTest, SgemmAndSgemvMatchNaiveProducts) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t m = 5, n = 7, k = 3, lda = k + 2, ldb = n + 1, ldc = n + 3;
  std::vector<float> a(m * lda), b(k * ldb), c(m * ldc, 1.0f), x(k);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  for (float& v : x) v = normal(rng);
  Sgemm(false, false, m, n, k, 2.0f, a.data(), lda, b.data(), ldb, 0.5f, c.data(), ldc);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0.5;
      for (int64_t p = 0; p < k; ++p) want += 2.0 * a[i * lda + p] * b[p * ldb + j];
      EXPECT_NEAR(c[i * ldc + j], want, 1e-5) << i << "," << j;
    }
  }
  std::vector<float> y(m, 3.0f);  // y = A x (A is m x k with leading dim lda).
  Sgemv(false, m, k, 1.0f, a.data(), lda, x.data(), 1, 0.0f, y.data(), 1);
  for (int64_t i = 0; i < m; ++i) {
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += a[i * lda + p] * x[p];
    EXPECT_NEAR(y[i], want, 1e-5) << i;
  }
}

}  // namespace
}  // namespace blas
}  // namespace tfm
