// One row's quantization (int8_quantize_rows.h) with AVX2: 8 floats, so 2
// groups of 4 levels, a step; the row's tail through masked loads.
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_quantize_rows.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2")
namespace tfm {
namespace {

// All ones in lanes k .. k + 7 that lie below `in`.
__m256i LanesBelow(int64_t k, int64_t in) {
  const int64_t left = in - k;
  const int32_t count = left >= 8 ? 8 : (left <= 0 ? 0 : static_cast<int32_t>(left));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

float HorizontalMin(__m256 v) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

}  // namespace

void Int8QuantizeRowAvx2(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                         int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  // Masked-off lanes load 0, which leaves min(0, x) and max(0, x) as they are.
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    const __m256 v = _mm256_loadu_ps(x + k);
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
  }
  if (k < in) {
    const __m256 v = _mm256_maskload_ps(x + k, LanesBelow(k, in));
    lo = _mm256_min_ps(lo, v);
    hi = _mm256_max_ps(hi, v);
  }
  const Int8RowScale s = Int8RowScaleFor(HorizontalMin(lo), HorizontalMax(hi), levels);
  const __m256 inverse = _mm256_set1_ps(s.inverse), zp = _mm256_set1_ps(s.zero_point);
  const __m256 top = _mm256_set1_ps(static_cast<float>(levels));
  const __m256 half = _mm256_set1_ps(0.5f), zero = _mm256_setzero_ps();
  for (int64_t g = 0; g < groups; g += 2) {
    const __m256i valid = LanesBelow(4 * g, in);
    __m256 v = _mm256_maskload_ps(x + 4 * g, valid);
    v = _mm256_add_ps(_mm256_mul_ps(v, inverse), zp);
    v = _mm256_add_ps(_mm256_min_ps(_mm256_max_ps(v, zero), top), half);
    // Levels past `in` are 0; then int32 -> u8 (every level fits).
    const __m256i levels32 = _mm256_cvttps_epi32(_mm256_and_ps(v, _mm256_castsi256_ps(valid)));
    const __m128i words =
        _mm_packus_epi32(_mm256_castsi256_si128(levels32), _mm256_extracti128_si256(levels32, 1));
    const __m128i bytes = _mm_packus_epi16(words, words);
    alignas(16) uint8_t two_groups[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(two_groups), bytes);
    __builtin_memcpy(u + g * group_stride, two_groups, 4);
    if (g + 1 < groups) __builtin_memcpy(u + (g + 1) * group_stride, two_groups + 4, 4);
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

}  // namespace tfm
#pragma GCC pop_options
