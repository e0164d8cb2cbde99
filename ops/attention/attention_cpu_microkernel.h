// AVX2/FMA building blocks of the packed attention kernels
// (attention_cpu_packed.cc): a register-blocked product for the small
// tiles of attention and a base-2 exponential.
//
// Why not cblas_sgemm per tile: a 64 x 64 x 64 product is ~0.5 us of work,
// and BLAS's per-call cost (argument checks, dispatch, packing both
// operands into its own buffers) is a large fraction of that. Here the
// operands are already laid out so that the micro-kernel reads them in
// place: no packing per call, nothing allocated.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_
#define TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_

#include <algorithm>
#include <cstdint>

#include "ops/cpu_math/simd_math.h"

#ifdef TFM_SIMD_AVX2

namespace tfm {
namespace attention_cpu {

// 2^x for x <= 127, exactly 0 for x <= -127 (masked scores are -inf, and
// every kernel relies on them giving 0). Scores are kept in base-2 units
// (log2(e) is folded into the scale), which saves the range reduction's
// multiply and one polynomial term over exp: x = n + r with |r| <= 1/2, and
// 2^r by a degree-5 polynomial fitted for relative error (1.8e-7 max in
// float arithmetic, i.e. 1-2 ulp).
inline __m256 Exp2x8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.326995553e-3f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(9.671511129e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.550715700e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(2.402224243e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(6.931470037e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  // 2^n built in the exponent field; n = -127 gives the bit pattern of +0.
  const __m256i two_n =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}

// The same function for one value, so that row tails match the body.
inline float Exp2(float x) { return _mm256_cvtss_f32(Exp2x8(_mm256_set1_ps(x))); }

// x[i] = 2^(x[i] - shift) in place; returns the sum of the new values.
inline float Exp2ShiftedSum(float* x, int64_t n, float shift) {
  return simd::ShiftedMapSum(
      x, x, n, shift, [](__m256 v) { return Exp2x8(v); }, [](float v) { return Exp2(v); });
}

// x[i] = 2^(x[i] - shift) in place.
inline void Exp2Shifted(float* x, int64_t n, float shift) {
  const __m256 vshift = _mm256_set1_ps(shift);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, Exp2x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vshift)));
  }
  for (; i < n; ++i) x[i] = Exp2(x[i] - shift);
}

// The register block: C[R x 16] (+)= sum over k < depth of A(r, k) B(k, :),
// where A(r, k) = a[r * a_row + k * a_step] (so A may be read transposed in
// place: a_row = 1 reads R consecutive floats per k) and row k of B starts
// at b + k * ldb. 2R accumulators, R broadcasts and 2 loads per k: with
// R = 6, 12 independent FMA chains cover the FMA latency on both ports.
template <int R, bool kAccumulate>
inline void MicroKernel16(int64_t depth, const float* a, int64_t a_row, int64_t a_step,
                          const float* b, int64_t ldb, float* c, int64_t ldc) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (kAccumulate) {
      acc[r][0] = _mm256_loadu_ps(c + r * ldc);
      acc[r][1] = _mm256_loadu_ps(c + r * ldc + 8);
    } else {
      acc[r][0] = _mm256_setzero_ps();
      acc[r][1] = _mm256_setzero_ps();
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * a_row);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
    a += a_step;
    b += ldb;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

// C[m x n] (+)= A(m x depth) B(depth x n) for n a multiple of 16, A as in
// MicroKernel16, B row-major with leading dimension ldb, C with ldc. Row
// blocks outside, column strips inside: a block's R rows of A stay in L1
// while it sweeps all of B (a tile's B is at most 64 KiB, in L2).
template <bool kAccumulate>
void TileProduct(int64_t m, int64_t n, int64_t depth, const float* a, int64_t a_row,
                 int64_t a_step, const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int kRows = 6;
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    for (int64_t j = 0; j < n; j += 16) {
      MicroKernel16<kRows, kAccumulate>(depth, a + i * a_row, a_row, a_step, b + j, ldb,
                                        c + i * ldc + j, ldc);
    }
  }
  const int64_t rest = m - i;
  if (rest == 0) return;
  const float* a_rest = a + i * a_row;
  float* c_rest = c + i * ldc;
  for (int64_t j = 0; j < n; j += 16) {
    switch (rest) {
      case 1:
        MicroKernel16<1, kAccumulate>(depth, a_rest, a_row, a_step, b + j, ldb, c_rest + j, ldc);
        break;
      case 2:
        MicroKernel16<2, kAccumulate>(depth, a_rest, a_row, a_step, b + j, ldb, c_rest + j, ldc);
        break;
      case 3:
        MicroKernel16<3, kAccumulate>(depth, a_rest, a_row, a_step, b + j, ldb, c_rest + j, ldc);
        break;
      case 4:
        MicroKernel16<4, kAccumulate>(depth, a_rest, a_row, a_step, b + j, ldb, c_rest + j, ldc);
        break;
      default:
        MicroKernel16<5, kAccumulate>(depth, a_rest, a_row, a_step, b + j, ldb, c_rest + j, ldc);
        break;
    }
  }
}

}  // namespace attention_cpu
}  // namespace tfm

#endif  // TFM_SIMD_AVX2
#endif  // TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_
