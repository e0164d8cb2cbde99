// Vectorised row primitives shared by the fused softmax kernels (attention,
// cross-entropy): max, exp(x - shift) with its sum, scaling.
//
// exp uses Cody-Waite range reduction and a degree-6 minimax polynomial
// (about 2 ulp over the float range), so results agree with std::exp to
// ~1e-7 relative. Inputs below -87.3 (including -inf, the value masked
// scores carry) give exactly 0, which the kernels rely on.
#ifndef TFM_OPS_CPU_MATH_SIMD_MATH_H_
#define TFM_OPS_CPU_MATH_SIMD_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TFM_SIMD_AVX2 1
#endif

namespace tfm {
namespace simd {

#ifdef TFM_SIMD_AVX2

inline __m256 Exp8(__m256 x) {
  const __m256 kMin = _mm256_set1_ps(-87.3f);
  const __m256 valid = _mm256_cmp_ps(x, kMin, _CMP_GE_OQ);  // False for NaN too.
  x = _mm256_min_ps(_mm256_max_ps(x, kMin), _mm256_set1_ps(88.37f));
  // x = n ln2 + r with |r| <= ln2 / 2; ln2 split so n * ln2_hi is exact.
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
  return _mm256_and_ps(result, valid);
}

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HorizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

#endif  // TFM_SIMD_AVX2

// exp for one float with the same polynomial, so tails match the vector body.
inline float Exp(float x) {
#ifdef TFM_SIMD_AVX2
  return _mm256_cvtss_f32(Exp8(_mm256_set1_ps(x)));
#else
  return x < -87.3f ? 0.0f : std::exp(x);
#endif
}

// max(x[0..n)), -inf for n == 0.
inline float Max(const float* x, int64_t n) {
  float result = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  if (n >= 8) {
    __m256 acc = _mm256_loadu_ps(x);
    for (i = 8; i + 8 <= n; i += 8) acc = _mm256_max_ps(acc, _mm256_loadu_ps(x + i));
    result = HorizontalMax(acc);
  }
#endif
  for (; i < n; ++i) result = x[i] > result ? x[i] : result;
  return result;
}

// sum(exp(x[i] - shift)) without writing x.
inline float SumExpShifted(const float* x, int64_t n, float shift) {
  float sum = 0.0f;
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  const __m256 vshift = _mm256_set1_ps(shift);
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_add_ps(acc, Exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vshift)));
  }
  sum = HorizontalSum(acc);
#endif
  for (; i < n; ++i) sum += Exp(x[i] - shift);
  return sum;
}

// x[i] *= factor.
inline void Scale(float* x, int64_t n, float factor) {
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  const __m256 f = _mm256_set1_ps(factor);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), f));
#endif
  for (; i < n; ++i) x[i] *= factor;
}

// z[i] = x[i] + y[i]. Explicitly vectorised: GCC's -O2 cost model leaves
// loops with an unknown trip count scalar.
inline void Add(const float* x, const float* y, float* z, int64_t n) {
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(z + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
#endif
  for (; i < n; ++i) z[i] = x[i] + y[i];
}

// max(x[0..n)) like Max, except that a NaN anywhere gives NaN (Max may
// skip it): kernels that promise PyTorch's NaN propagation test for it.
inline float MaxOrNaN(const float* x, int64_t n) {
  float result = -std::numeric_limits<float>::infinity();
  bool nan = false;
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  if (n >= 8) {
    __m256 acc = _mm256_loadu_ps(x);
    __m256 unordered = _mm256_cmp_ps(acc, acc, _CMP_UNORD_Q);
    for (i = 8; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      acc = _mm256_max_ps(acc, v);
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    result = HorizontalMax(acc);
    nan = _mm256_movemask_ps(unordered) != 0;
  }
#endif
  for (; i < n; ++i) {
    nan |= x[i] != x[i];
    result = x[i] > result ? x[i] : result;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : result;
}

#ifdef TFM_SIMD_AVX2
// y[i] = f(x[i] - shift) for an 8-wide function f8 and its one-value twin f1
// (so tails match the body); x and y may be the same array or disjoint.
// Returns the sum of the y[i]. Serves every exp-and-sum of a softmax row,
// whatever the base of the exponential.
template <typename F8, typename F1>
inline float ShiftedMapSum(const float* x, float* y, int64_t n, float shift, F8 f8, F1 f1) {
  const __m256 vshift = _mm256_set1_ps(shift);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  // Two accumulators: the adds' latency would otherwise bound the loop.
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = f8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vshift));
    const __m256 e1 = f8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vshift));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    acc0 = _mm256_add_ps(acc0, e0);
    acc1 = _mm256_add_ps(acc1, e1);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 e = f8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vshift));
    _mm256_storeu_ps(y + i, e);
    acc0 = _mm256_add_ps(acc0, e);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) {
    y[i] = f1(x[i] - shift);
    sum += y[i];
  }
  return sum;
}
#endif  // TFM_SIMD_AVX2

// y[i] = exp(x[i] - shift) (x and y may be the same array or disjoint);
// returns the sum of the y[i].
inline float ExpShiftedSumTo(const float* x, float* y, int64_t n, float shift) {
#ifdef TFM_SIMD_AVX2
  return ShiftedMapSum(
      x, y, n, shift, [](__m256 v) { return Exp8(v); }, [](float v) { return Exp(v); });
#else
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = Exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
#endif
}

// x[i] = exp(x[i] - shift) in place; returns the sum of the new values.
inline float ExpShiftedSum(float* x, int64_t n, float shift) {
  return ExpShiftedSumTo(x, x, n, shift);
}

// sum(a[i] * b[i]).
inline float Dot(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  int64_t i = 0;
#ifdef TFM_SIMD_AVX2
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  }
  sum = HorizontalSum(acc);
#endif
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace simd
}  // namespace tfm

#endif  // TFM_OPS_CPU_MATH_SIMD_MATH_H_
