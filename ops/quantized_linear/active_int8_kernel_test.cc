// Runs once with TFM_CPU_ISA=avx2 and once with avx512 (tfm_isa_test): the
// kernel quantized_linear takes by default is the one the setting implies,
// so forcing AVX2 exercises the path of CPUs without VNNI. Under AVX-512 a
// CPU whose AMX tiles are usable runs them: the start-up check against the
// scalar reference must have passed there.
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/cpu_features.h"
#include "gtest/gtest.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

TEST(ActiveInt8KernelTest, FollowsTfmCpuIsa) {
  const std::string isa = std::getenv("TFM_CPU_ISA");
  const CpuFeatures& f = HostCpuFeatures();
  const Int8Kernel expected = isa == "avx2"                 ? Int8Kernel::kAvx2
                              : f.avx512_vnni && f.amx_int8 ? Int8Kernel::kAmxInt8
                              : f.avx512_vnni               ? Int8Kernel::kAvx512Vnni
                              : f.avx_vnni                  ? Int8Kernel::kAvxVnni
                                                            : Int8Kernel::kAvx2;
  EXPECT_EQ(ActiveInt8Kernel(), expected) << Int8KernelName(ActiveInt8Kernel());
  std::printf("[ int8     ] TFM_CPU_ISA=%s: %s\n", isa.c_str(), Int8KernelName(ActiveInt8Kernel()));

  const Tensor x = *RandomUniform({9, 40}, PhiloxState{3, 1, 0}, -2.0f, 2.0f);
  const Tensor w = *RandomUniform({50, 40}, PhiloxState{3, 2, 0}, -1.0f, 1.0f);
  const QuantizedWeight q = *QuantizeLinearWeight(w);
  EXPECT_EQ(QuantizedLinear(x, q)->ToVector<float>(),
            QuantizedLinear(x, q, std::nullopt, false, expected)->ToVector<float>());
}

}  // namespace
}  // namespace tfm
