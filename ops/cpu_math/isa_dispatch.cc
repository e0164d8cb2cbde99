#include "ops/cpu_math/isa_dispatch.h"

namespace tfm {

KernelFn SelectCpuKernel(CpuKernel avx2, CpuKernel avx512) {
  if (!HostCpuFeatures().avx2) {
    return [](KernelContext&) { return CheckCpuSupported(); };
  }
  return ActiveCpuIsa() == CpuIsa::kAvx512 ? avx512 : avx2;
}

}  // namespace tfm
