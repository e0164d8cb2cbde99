#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

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
  EXPECT_EQ(f.avx512_vnni, f.avx512 && __builtin_cpu_supports("avx512vnni"));
  EXPECT_FALSE(f.vendor.empty());
}

// The int8 features the quantized kernels choose between, against the
// kernel's own list in /proc/cpuinfo (an independent reader of CPUID); and
// AMX only with the tile permission granted (else a tile instruction
// would kill the process).
TEST(CpuFeaturesTest, Int8FeaturesAgreeWithTheKernel) {
  const CpuFeatures& f = HostCpuFeatures();
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
  }
  if (line.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  std::istringstream words(line);
  std::set<std::string> flags{std::istream_iterator<std::string>(words),
                              std::istream_iterator<std::string>()};
  EXPECT_EQ(f.avx_vnni, f.avx2 && flags.count("avx_vnni") > 0) << line;
  EXPECT_EQ(f.avx512_vnni, f.avx512 && flags.count("avx512_vnni") > 0) << line;
  if (f.amx_int8) EXPECT_TRUE(flags.count("amx_int8") > 0 && flags.count("amx_tile") > 0);
  if (flags.count("avx_vnni") > 0 && f.avx2) {
    EXPECT_NE(CpuSummary().find("avx_vnni"), std::string::npos);
  }
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
