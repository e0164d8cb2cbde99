#include "core/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace tfm {
namespace {

struct Regs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs CpuId(unsigned leaf, unsigned subleaf = 0) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool Bit(unsigned value, int bit) { return (value >> bit) & 1u; }

// XCR0: which register states the OS saves on context switches.
uint64_t ReadXcr0() {
  unsigned eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux (since 5.16) hands out AMX tile data state only to processes that
// ask for it; a tile instruction before that raises SIGILL. Asking twice is
// harmless, and a kernel without the call (ENOSYS/EINVAL) means no AMX.
bool RequestAmxTilePermission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023;  // From <asm/prctl.h>.
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures Detect() {
  CpuFeatures f;
  const Regs leaf0 = CpuId(0);
  char vendor[13] = {};
  std::memcpy(vendor, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);
  f.vendor = vendor;

  const Regs leaf1 = CpuId(1);
  const int base_family = (leaf1.eax >> 8) & 0xf;
  const int base_model = (leaf1.eax >> 4) & 0xf;
  f.family = base_family == 0xf ? base_family + ((leaf1.eax >> 20) & 0xff) : base_family;
  f.model = (base_family == 0x6 || base_family == 0xf)
                ? base_model + (((leaf1.eax >> 16) & 0xf) << 4)
                : base_model;

  if (CpuId(0x80000000).eax >= 0x80000004) {
    char brand[49] = {};
    for (unsigned i = 0; i < 3; ++i) {
      const Regs r = CpuId(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    f.brand = std::string(absl::StripAsciiWhitespace(brand));
  }

  const bool osxsave = Bit(leaf1.ecx, 27);
  const uint64_t xcr0 = osxsave ? ReadXcr0() : 0;
  const bool ymm_state = (xcr0 & 0x6) == 0x6;           // SSE + AVX state.
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;         // + opmask, ZMM hi256, hi16.
  const bool tile_state = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA.
  const bool fma = Bit(leaf1.ecx, 12), f16c = Bit(leaf1.ecx, 29), avx = Bit(leaf1.ecx, 28);

  if (leaf0.eax >= 7) {
    const Regs leaf7 = CpuId(7, 0);
    f.avx2 = ymm_state && avx && fma && f16c && Bit(leaf7.ebx, 5);
    f.avx512 = f.avx2 && zmm_state && Bit(leaf7.ebx, 16) /*F*/ && Bit(leaf7.ebx, 17) /*DQ*/ &&
               Bit(leaf7.ebx, 30) /*BW*/ && Bit(leaf7.ebx, 31) /*VL*/;
    f.avx512_vnni = f.avx512 && Bit(leaf7.ecx, 11);
    if (leaf7.eax >= 1) {
      const Regs leaf7_1 = CpuId(7, 1);
      f.avx512_bf16 = f.avx512 && Bit(leaf7_1.eax, 5);
      f.avx_vnni = f.avx2 && Bit(leaf7_1.eax, 4);
    }
    const bool amx_tile = tile_state && Bit(leaf7.edx, 24);
    const bool tiles_usable = amx_tile && RequestAmxTilePermission();
    f.amx_bf16 = tiles_usable && Bit(leaf7.edx, 22);
    f.amx_int8 = tiles_usable && Bit(leaf7.edx, 25);
  }
  return f;
}

CpuIsa DetectActiveIsa() {
  const CpuFeatures& f = HostCpuFeatures();
  CpuIsa best = f.avx512 ? CpuIsa::kAvx512 : CpuIsa::kAvx2;
  const char* cap = std::getenv("TFM_CPU_ISA");
  if (cap != nullptr && *cap != '\0') {
    const std::string wanted = absl::AsciiStrToLower(cap);
    if (wanted == "avx2") {
      best = CpuIsa::kAvx2;
    } else if (wanted == "avx512" && f.avx512) {
      best = CpuIsa::kAvx512;
    } else {
      std::fprintf(stderr,
                   "warning: TFM_CPU_ISA=%s ignored (this CPU runs: %s); using %s kernels\n",
                   cap, f.avx512 ? "avx2, avx512" : "avx2", CpuIsaName(best));
    }
  }
  return best;
}

}  // namespace

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures* features = new CpuFeatures(Detect());
  return *features;
}

const char* CpuIsaName(CpuIsa isa) { return isa == CpuIsa::kAvx512 ? "avx512" : "avx2"; }

CpuIsa ActiveCpuIsa() {
  static const CpuIsa isa = DetectActiveIsa();
  return isa;
}

absl::Status CheckCpuSupported() {
  const CpuFeatures& f = HostCpuFeatures();
  if (f.avx2) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this CPU (", f.brand.empty() ? f.vendor : f.brand, ", family ", f.family, " model ",
      f.model,
      ") lacks AVX2/FMA/F16C or the OS does not enable AVX state; the engine's CPU kernels "
      "need x86-64-v3 (every x86 server since 2013)"));
}

std::string CpuSummary() {
  const CpuFeatures& f = HostCpuFeatures();
  std::vector<const char*> isas;
  if (f.avx2) isas.push_back("avx2 fma f16c");
  if (f.avx512) isas.push_back("avx512f/bw/dq/vl");
  if (f.avx512_bf16) isas.push_back("avx512_bf16");
  if (f.avx512_vnni) isas.push_back("avx512_vnni");
  if (f.avx_vnni) isas.push_back("avx_vnni");
  if (f.amx_bf16) isas.push_back("amx_bf16");
  if (f.amx_int8) isas.push_back("amx_int8");
  return absl::StrCat(f.brand.empty() ? f.vendor : f.brand, " (family ", f.family, " model ",
                      f.model, "): ", isas.empty() ? "no avx2" : absl::StrJoin(isas, " "),
                      "; kernels ", f.avx2 ? CpuIsaName(ActiveCpuIsa()) : "none");
}

}  // namespace tfm
