// Run-time choice between the AVX2 and AVX-512 builds of our CPU kernels
// (see ops/cpu_math/isa.h), made once per kernel from tfm::ActiveCpuIsa():
// by the CPU's features, never by its model number.
//
// A kernel file defines its kernels between TFM_ISA_BEGIN and TFM_ISA_END
// (so in tfm::avx2 in one build and tfm::avx512 in the other) and registers
// them after TFM_ISA_END:
//
//   TFM_REGISTER_ISA_KERNEL("relu", DType::kF32, ReluCpu);
//
// The AVX2 build registers one kernel that holds the chosen copy; the
// AVX-512 build registers nothing.
#ifndef TFM_OPS_CPU_MATH_ISA_DISPATCH_H_
#define TFM_OPS_CPU_MATH_ISA_DISPATCH_H_

#include <type_traits>

#include "absl/status/status.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/op_registry.h"

namespace tfm {

using CpuKernel = absl::Status (*)(KernelContext&);

// The build of a kernel for ActiveCpuIsa(). On a CPU without AVX2 it is a
// kernel that returns CheckCpuSupported()'s error: an op then fails with a
// message instead of the process dying with SIGILL.
KernelFn SelectCpuKernel(CpuKernel avx2, CpuKernel avx512);

// The same choice for a plain function called from baseline code (e.g. a
// helper shared by two ops). Callers keep the result (a function-local
// static), so the choice is made once.
template <typename Fn>
Fn SelectCpuFunction(Fn avx2, Fn avx512) {
  TFM_CHECK(HostCpuFeatures().avx2,
            "CPU kernels need AVX2/FMA (see tfm::CheckCpuSupported, called by every main)");
  return ActiveCpuIsa() == CpuIsa::kAvx512 ? avx512 : avx2;
}

}  // namespace tfm

#if defined(TFM_KERNEL_ISA_AVX2)
#define TFM_REGISTER_ISA_KERNEL(op, dtype, fn)                                          \
  namespace tfm {                                                                       \
  namespace avx512 {                                                                    \
  ::absl::Status fn(::tfm::KernelContext& context);                                     \
  }                                                                                     \
  TFM_REGISTER_KERNEL(op, DeviceType::kCPU, dtype, SelectCpuKernel(&avx2::fn, &avx512::fn)); \
  }                                                                                     \
  static_assert(true, "")
#elif defined(TFM_KERNEL_ISA_AVX512)
// Registered by the AVX2 build, which declares this build's kernel: checked
// here to have the signature it declares.
#define TFM_REGISTER_ISA_KERNEL(op, dtype, fn)                                           \
  static_assert(std::is_same<decltype(&::tfm::avx512::fn), ::tfm::CpuKernel>::value, \
                "kernel " #fn " must be absl::Status(KernelContext&)")
#endif

#endif  // TFM_OPS_CPU_MATH_ISA_DISPATCH_H_
