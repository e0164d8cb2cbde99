// Linked into every test that runs once per instruction set (tfm_isa_test in
// tools/build_defs.bzl). Bazel starts each copy with TFM_CPU_ISA set to its
// instruction set; on a host that cannot run it, every test of that copy is
// skipped with the reason, so a machine without AVX-512 passes while one
// with it runs both.
#include <cstdlib>
#include <string>

#include "core/cpu_features.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

class CpuIsaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* requested = std::getenv("TFM_CPU_ISA");
    ASSERT_NE(requested, nullptr) << "tfm_isa_test sets TFM_CPU_ISA for each copy";
    const std::string isa = requested;
    const CpuFeatures& features = HostCpuFeatures();
    if ((isa == "avx512" && !features.avx512) || !features.avx2) {
      GTEST_SKIP() << "this host cannot run " << isa << " kernels: " << CpuSummary();
    }
    ASSERT_EQ(isa, CpuIsaName(ActiveCpuIsa())) << CpuSummary();
    std::printf("[ kernels  ] %s\n", CpuSummary().c_str());
  }
};

const ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new CpuIsaEnvironment);

}  // namespace
}  // namespace tfm
