#include "ops/matmul/gemm_bf16_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace {

bool UseAmx() {
  static const bool amx = HostCpuFeatures().amx_bf16 && HostCpuFeatures().avx512_bf16;
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
                          copy[r * stored_cols + c] = RoundToBf16(x.data[r * x.ld + c]);
                        }
                      }
                    });
  return copy;
}

}  // namespace

float RoundToBf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if (std::isnan(x)) {
    bits |= 0x00400000u;  // Quiet, so that dropping the low bits keeps it NaN.
  } else {
    bits += 0x7FFFu + ((bits >> 16) & 1u);  // To nearest, ties to even.
  }
  bits &= 0xFFFF0000u;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof(rounded));
  return rounded;
}

const char* Bf16ProductKernelName() { return UseAmx() ? "amx_bf16" : "f32_of_rounded"; }

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
