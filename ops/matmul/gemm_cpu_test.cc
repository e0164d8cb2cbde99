#include "ops/matmul/gemm_cpu.h"

#include <cblas.h>
#include <dlfcn.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

// The reference BLAS would be correct but ~50x slower; make the choice loud.
TEST(GemmCpuTest, LinkedBlasIsOpenBlas) {
  const std::string config = BlasConfig();
  EXPECT_NE(config.find("OpenBLAS"), std::string::npos) << config;
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&cblas_sgemm), &info), 0);
  EXPECT_NE(std::string(info.dli_fname).find("openblas"), std::string::npos)
      << "cblas_sgemm comes from " << info.dli_fname;
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

}  // namespace
}  // namespace tfm
