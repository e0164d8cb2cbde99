#include "ops/matmul/gemm_bf16_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace {

// A sample product (both operands' layouts, every tile edge) on the tiles
// against the rounded f32 GEMM, once: a CPU whose tiles disagree is
// reported and keeps the f32 GEMM of rounded inputs, as the int8 kernel's
// start-up check does.
bool AmxAgreesWithRoundedF32() {
  const int64_t m = 45, n = 37, k = 70;
  std::vector<float> a(m * k), b(k * n), amx(m * n), reference(m * n);
  for (int64_t i = 0; i < m * k; ++i) a[i] = static_cast<float>((i * 37) % 23) / 7.0f - 1.5f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = static_cast<float>((i * 53) % 19) / 5.0f - 1.75f;
  ThreadPool pool(1);
  for (const bool trans : {false, true}) {
    // A stored [m, k] and B^T stored [n, k] (linear's forward), then A^T
    // stored [k, m] and B stored [k, n] (a weight's gradient).
    const GemmOperand op_a{a.data(), trans ? m : k, trans};
    const GemmOperand op_b{b.data(), trans ? n : k, !trans};
    GemmBf16Amx(op_a, op_b, m, n, k, 0.0f, amx.data(), &pool);
    GemmBf16OfRounded(op_a, op_b, m, n, k, 0.0f, reference.data(), &pool);
    for (int64_t i = 0; i < m * n; ++i) {
      // Sums of at most 70 products of magnitude <= 9: f32 rounding stays
      // far below 1e-3 in either order.
      if (!(std::fabs(amx[i] - reference[i]) <= 1e-3f)) {
        std::fprintf(stderr,
                     "warning: the AMX bf16 product disagrees with the f32 reference at element "
                     "%lld of its start-up check (%g against %g); bf16 products use the f32 GEMM "
                     "of rounded inputs instead\n",
                     static_cast<long long>(i), amx[i], reference[i]);
        return false;
      }
    }
  }
  return true;
}

// The CPU has AMX-BF16 with usable tiles and AVX512-BF16 (the packing's
// conversions), our kernels may use AVX-512 (TFM_CPU_ISA=avx2 caps them, as
// it does the int8 kernel), and the tiles pass the start-up check.
bool UseAmx() {
  static const bool amx = HostCpuFeatures().amx_bf16 && HostCpuFeatures().avx512_bf16 &&
                          ActiveCpuIsa() == CpuIsa::kAvx512 && AmxAgreesWithRoundedF32();
  return amx;
}

// The stored rows x columns of an operand of op extent rows x cols: a copy
// with every value rounded, dense (ld = its stored row length).
std::vector<float> RoundedCopy(const GemmOperand& x, int64_t rows, int64_t cols,
                               ThreadPool* pool) {
  const int64_t stored_rows = x.trans ? cols : rows, stored_cols = x.trans ? rows : cols;
  std::vector<float> copy(stored_rows * stored_cols);
  pool->ParallelFor(stored_rows, std::max<int64_t>(1, 16384 / stored_cols),
                    [&](int64_t first, int64_t last) {
                      for (int64_t r = first; r < last; ++r) {
                        for (int64_t c = 0; c < stored_cols; ++c) {
                          copy[r * stored_cols + c] =
                              static_cast<float>(BFloat16(x.data[r * x.ld + c]));
                        }
                      }
                    });
  return copy;
}

}  // namespace

const char* Bf16ProductKernelName() { return UseAmx() ? "amx_bf16" : "f32_of_rounded"; }

bool Bf16ProductsOnAmx() { return UseAmx(); }

int64_t Bf16PackedWeightRows(int64_t n) { return (n + 31) / 32 * 32; }

int64_t Bf16PackedWeightInputs(int64_t k) { return (k + 31) / 32 * 32; }

void ApplyEpilogue(const GemmEpilogue& epilogue, int64_t first, int64_t last, int64_t n,
                   float* c) {
  for (int64_t r = first; r < last; ++r) {
    float* row = c + r * n;
    if (epilogue.bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += epilogue.bias[j];
    }
    if (epilogue.relu) {
      for (int64_t j = 0; j < n; ++j) {
        if (row[j] <= 0.0f) row[j] = 0.0f;
      }
    }
  }
}

void GemmBf16OfRounded(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n,
                       int64_t k, float beta, float* c, ThreadPool* pool,
                       const GemmEpilogue& epilogue) {
  const std::vector<float> ra = RoundedCopy(a, m, k, pool), rb = RoundedCopy(b, k, n, pool);
  GemmCpuF32(a.trans, b.trans, m, n, k, ra.data(), rb.data(), beta, c);
  if (epilogue.bias == nullptr && !epilogue.relu) return;
  pool->ParallelFor(m, std::max<int64_t>(1, 16384 / n), [&](int64_t first, int64_t last) {
    ApplyEpilogue(epilogue, first, last, n, c);
  });
}

void GemmBf16(const GemmOperand& a, const GemmOperand& b, int64_t m, int64_t n, int64_t k,
              float beta, float* c, ThreadPool* pool, const GemmEpilogue& epilogue) {
  if (UseAmx()) {
    GemmBf16Amx(a, b, m, n, k, beta, c, pool, epilogue);
  } else {
    GemmBf16OfRounded(a, b, m, n, k, beta, c, pool, epilogue);
  }
}

}  // namespace tfm
