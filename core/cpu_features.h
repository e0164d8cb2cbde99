// What the host CPU can execute, read once from CPUID and XGETBV.
//
// Kernels are chosen from these features at run time, never from a table of
// CPU model numbers (a new model with known features must just work), and
// never from one compile flag for the whole binary. An instruction set counts
// only when the operating system also saves its registers (XGETBV): a
// hypervisor may hide AVX-512 state even where CPUID lists the instructions.
#ifndef TFM_CORE_CPU_FEATURES_H_
#define TFM_CORE_CPU_FEATURES_H_

#include <string>

#include "absl/status/status.h"

namespace tfm {

struct CpuFeatures {
  std::string vendor;      // "GenuineIntel", "AuthenticAMD", ...
  std::string brand;       // "AMD EPYC 7B12", from the extended brand string
  int family = 0;          // For the environment report only, never for dispatch.
  int model = 0;
  bool avx2 = false;       // AVX2 + FMA + F16C with YMM state enabled: x86-64-v3.
  bool avx512 = false;     // AVX-512 F, BW, DQ, VL with ZMM state: x86-64-v4.
  bool avx512_bf16 = false;
  // int8 dot products (vpdpbusd): with 512-bit vectors (AVX512_VNNI, Intel
  // since Cascade Lake, AMD since Zen 4), and the 256-bit VEX form
  // (AVX-VNNI, Intel since Alder Lake / Sapphire Rapids, AMD since Zen 5).
  bool avx512_vnni = false;
  bool avx_vnni = false;
  // AMX tiles usable: the CPU has them, the OS saves tile state (XCR0) and
  // Linux granted this process the tile data permission (arch_prctl
  // ARCH_REQ_XCOMP_PERM, requested once by the detection); without the
  // permission the first tile instruction would kill the process.
  bool amx_bf16 = false;
  bool amx_int8 = false;
};

// The host's features, detected once.
const CpuFeatures& HostCpuFeatures();

// The instruction sets our own CPU kernels are compiled for, best last.
enum class CpuIsa { kAvx2, kAvx512 };

// "avx2" / "avx512".
const char* CpuIsaName(CpuIsa isa);

// The widest instruction set this CPU runs that we have kernels for. The
// environment variable TFM_CPU_ISA=avx2 caps it (to compare kernels or to
// reproduce a result from a smaller machine); a value the CPU cannot run is
// ignored with a warning on stderr.
CpuIsa ActiveCpuIsa();

// OK on a CPU with AVX2/FMA (every x86 server since 2013). Otherwise an error
// naming the CPU and what it lacks: the engine's kernels need AVX2, and
// without this check the first kernel would die with SIGILL.
absl::Status CheckCpuSupported();

// One line for logs and benchmarks: "AMD EPYC 7B12 (family 23 model 49):
// avx2 fma f16c; kernels avx2".
std::string CpuSummary();

}  // namespace tfm

#endif  // TFM_CORE_CPU_FEATURES_H_
