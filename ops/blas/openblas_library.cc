#include "ops/blas/openblas_library.h"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/check.h"
#include "core/cpu_features.h"

namespace tfm {
namespace blas {
namespace {

// The CBLAS ABI: enums are ints with these standard values, blasint is int
// in Debian's build (not INTERFACE64).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using SgemmFn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                         int, float, float*, int);
using SgemvFn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
using SetThreadsFn = void (*)(int);
using GetStringFn = char* (*)();

struct Library {
  BlasKernels kernels;
  SgemmFn sgemm = nullptr;
  SgemvFn sgemv = nullptr;
};

// The names Debian's packages install, most specific first.
constexpr const char* kCandidates[] = {"libopenblas.so.0", "libopenblasp.so.0",
                                       "libopenblas.so"};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::abort();
}

void* Symbol(void* handle, const char* name) {
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) Fail(absl::StrCat("OpenBLAS lacks ", name, ": ", dlerror()));
  return symbol;
}

Library* Load() {
  auto* lib = new Library;
  const CpuFeatures& cpu = HostCpuFeatures();
  // A library already in the process (linked by someone else) has chosen its
  // kernels; we only report them.
  void* handle = nullptr;
  for (const char* name : kCandidates) {
    handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (handle != nullptr) {
      lib->kernels.requested = "(already loaded: its own choice)";
      break;
    }
  }
  if (handle == nullptr) {
    const char* user_choice = std::getenv("OPENBLAS_CORETYPE");
    if (user_choice != nullptr && *user_choice != '\0') {
      lib->kernels.requested = user_choice;
      lib->kernels.reason = "OPENBLAS_CORETYPE set by the user";
    } else {
      const CoreChoice choice =
          ChooseCoreType(cpu.avx2, cpu.avx512, cpu.avx512_bf16, cpu.vendor == "AuthenticAMD");
      lib->kernels.requested = choice.core_type;
      lib->kernels.reason = choice.reason;
      setenv("OPENBLAS_CORETYPE", choice.core_type.c_str(), 1);
    }
    // One thread: our pool splits products (see the header). Set before
    // loading so OpenBLAS does not even start its own threads.
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    std::string errors;
    for (const char* name : kCandidates) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle != nullptr) break;
      absl::StrAppend(&errors, "\n  ", dlerror());
    }
    if (handle == nullptr) {
      Fail(absl::StrCat("cannot load OpenBLAS (install libopenblas0-pthread: tools/setup.sh):",
                        errors));
    }
  }
  lib->sgemm = reinterpret_cast<SgemmFn>(Symbol(handle, "cblas_sgemm"));
  lib->sgemv = reinterpret_cast<SgemvFn>(Symbol(handle, "cblas_sgemv"));
  reinterpret_cast<SetThreadsFn>(Symbol(handle, "openblas_set_num_threads"))(1);
  lib->kernels.config = reinterpret_cast<GetStringFn>(Symbol(handle, "openblas_get_config"))();
  lib->kernels.core = reinterpret_cast<GetStringFn>(Symbol(handle, "openblas_get_corename"))();
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) {
    lib->kernels.library = map->l_name;
  }
  const int cpu_bits = cpu.avx512 ? 512 : cpu.avx2 ? 256 : 128;
  lib->kernels.generic_fallback = CoreVectorBits(lib->kernels.core) < cpu_bits;
  return lib;
}

const Library& Get() {
  static const Library* lib = Load();
  return *lib;
}

}  // namespace

CoreChoice ChooseCoreType(bool avx2, bool avx512, bool avx512_bf16, bool amd) {
  if (avx512 && avx512_bf16) {
    return {"Cooperlake", "AVX-512 with BF16: 512-bit kernels (Cooper Lake and later)"};
  }
  if (avx512) return {"SkylakeX", "AVX-512 F/BW/DQ/VL: 512-bit kernels"};
  if (avx2) {
    // Zen and Haswell share OpenBLAS's AVX2 kernels; Zen's blocking suits
    // AMD's caches. A vendor, not a model, decides.
    return amd ? CoreChoice{"Zen", "AMD with AVX2+FMA: 256-bit kernels"}
               : CoreChoice{"Haswell", "AVX2+FMA: 256-bit kernels"};
  }
  return {"Sandybridge", "no AVX2: the engine refuses to run (core/cpu_features.h)"};
}

int CoreVectorBits(const std::string& core_name) {
  const std::string core = absl::AsciiStrToLower(core_name);
  for (const char* wide : {"skylakex", "cooperlake", "sapphirerapids"}) {
    if (core == wide) return 512;
  }
  for (const char* avx2 : {"haswell", "zen", "excavator", "steamroller"}) {
    if (core == avx2) return 256;
  }
  return 128;
}

const BlasKernels& Kernels() { return Get().kernels; }

std::string KernelSummary() {
  const BlasKernels& k = Kernels();
  return absl::StrCat(k.config, "; core ", k.core, " (requested ", k.requested,
                      k.reason.empty() ? "" : ": ", k.reason, ")",
                      k.generic_fallback ? " GENERIC FALLBACK" : "", "; 1 BLAS thread; ",
                      k.library);
}

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc) {
  TFM_CHECK(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX && ldb <= INT_MAX &&
                ldc <= INT_MAX,
            "GEMM extent exceeds blasint");
  Get().sgemm(kRowMajor, trans_a ? kTrans : kNoTrans, trans_b ? kTrans : kNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void Sgemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* a, int64_t lda,
           const float* x, int64_t incx, float beta, float* y, int64_t incy) {
  TFM_CHECK(rows <= INT_MAX && cols <= INT_MAX && lda <= INT_MAX, "GEMV extent exceeds blasint");
  Get().sgemv(kRowMajor, trans ? kTrans : kNoTrans, static_cast<int>(rows),
              static_cast<int>(cols), alpha, a, static_cast<int>(lda), x, static_cast<int>(incx),
              beta, y, static_cast<int>(incy));
}

}  // namespace blas
}  // namespace tfm
