// OpenBLAS, loaded at run time with kernels chosen from the CPU's features.
//
// Why loaded with dlopen rather than linked: Debian's OpenBLAS (0.3.21,
// DYNAMIC_ARCH) picks its kernels in a library constructor from a table of
// CPU model numbers, and a model it does not know gets the SSE3 "Prescott"
// kernels: on an Intel Xeon of model 207 (AVX-512, AMX) sgemm ran at 38-63
// GFLOP/s instead of ~300. OpenBLAS reads OPENBLAS_CORETYPE in that
// constructor, so we set it from CPUID features (core/cpu_features.h) before
// the library is loaded, which linking at build time would not allow.
//
// Why OpenBLAS rather than BLIS 0.9 or oneDNN 2.6 (also in Debian): with the
// right core type it matched or beat PyTorch's MKL sgemm on the machines we
// measured (Zen 2: 174 vs 140 GFLOP/s; Xeon model 207 as Cooperlake: 304 vs
// 193-308), its kernels are selected purely by the core type we pass, and it
// runs single-threaded under our own thread pool without an OpenMP runtime
// competing for the cores. AMX is left out: it multiplies bf16/int8 only, and
// fp32 training would lose the precision that parity with the paper needs.
//
// Threading: OpenBLAS is held to one thread; ops/matmul/gemm_cpu splits and
// batches products over ThreadPool::Default(), so one pool owns the cores.
#ifndef TFM_OPS_BLAS_OPENBLAS_LIBRARY_H_
#define TFM_OPS_BLAS_OPENBLAS_LIBRARY_H_

#include <cstdint>
#include <string>

namespace tfm {
namespace blas {

// What was loaded and why; filled by the first call of any function here.
struct BlasKernels {
  std::string library;    // Path of the shared object, e.g. /usr/lib/.../libopenblas.so.0.
  std::string config;     // openblas_get_config(): version and build options.
  std::string core;       // openblas_get_corename(): the kernels in use, e.g. "Haswell".
  std::string requested;  // The OPENBLAS_CORETYPE we set, or the user's own.
  std::string reason;     // Why that core type: the CPU features it rests on.
  // True when the kernels use narrower vectors than the CPU has (an SSE
  // fallback on an AVX2 machine, AVX2 kernels on an AVX-512 one).
  bool generic_fallback = false;
};

// Loads the library once (thread-safe). Aborts with a clear message if no
// OpenBLAS can be loaded: every CPU product depends on it, and tools/setup.sh
// installs it.
const BlasKernels& Kernels();

// "OpenBLAS 0.3.21 ... core Haswell (requested Zen: AMD, AVX2+FMA), 1 thread".
std::string KernelSummary();

// Maps a CPU's features to the OpenBLAS core type with the widest kernels it
// runs (no model numbers). Exposed for tests.
struct CoreChoice {
  std::string core_type;
  std::string reason;
};
CoreChoice ChooseCoreType(bool avx2, bool avx512, bool avx512_bf16, bool amd);

// The vector width (bits) of an OpenBLAS core type's sgemm kernels: 512 for
// SkylakeX and later, 256 for Haswell/Zen, 128 or 0 for older/unknown ones.
int CoreVectorBits(const std::string& core_name);

// Single-threaded row-major products, straight into OpenBLAS (k > 0, m, n > 0):
// C = alpha op(A) op(B) + beta C with explicit leading dimensions.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
           int64_t ldc);

// y = alpha op(A) x + beta y, A row-major [rows, cols] with leading dimension
// lda; op(A) = A^T when trans.
void Sgemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* a, int64_t lda,
           const float* x, int64_t incx, float beta, float* y, int64_t incy);

}  // namespace blas
}  // namespace tfm

#endif  // TFM_OPS_BLAS_OPENBLAS_LIBRARY_H_
