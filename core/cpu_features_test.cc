#include "core/cpu_features.h"

#include <gtest/gtest.h>

namespace tfm {
namespace {

// GCC's own CPUID reader is an independent check of ours.
TEST(CpuFeaturesTest, AgreesWithTheCompilersDetection) {
  const CpuFeatures& f = HostCpuFeatures();
  __builtin_cpu_init();
  EXPECT_EQ(f.avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  EXPECT_EQ(f.avx512, __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512vl"));
  EXPECT_FALSE(f.vendor.empty());
}

TEST(CpuFeaturesTest, ActiveIsaIsOneTheCpuRuns) {
  const CpuFeatures& f = HostCpuFeatures();
  if (ActiveCpuIsa() == CpuIsa::kAvx512) EXPECT_TRUE(f.avx512);
  EXPECT_EQ(CheckCpuSupported().ok(), f.avx2);
  EXPECT_NE(CpuSummary().find(f.brand.empty() ? f.vendor : f.brand), std::string::npos);
  EXPECT_NE(CpuSummary().find(CpuIsaName(ActiveCpuIsa())), std::string::npos);
}

}  // namespace
}  // namespace tfm
