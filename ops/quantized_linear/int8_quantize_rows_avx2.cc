// The quantizations of one row (int8_quantize_rows.h) with AVX2: 8 floats,
// so 2 groups of 4 levels, a step; the row's tail through masked loads.
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

// The first `count` (<= 2) groups of 4 bytes of `bytes` to `to`, `stride`
// bytes apart.
void StoreGroups(__m128i bytes, int64_t count, int64_t stride, void* to) {
  char* out = static_cast<char*>(to);
  alignas(16) char two_groups[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(two_groups), bytes);
  __builtin_memcpy(out, two_groups, 4);
  if (count == 2) __builtin_memcpy(out + stride, two_groups + 4, 4);
}

}  // namespace

void Int8QuantizeRowAvx2(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                         int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  // Masked-off lanes load 0, which leaves min(0, x) and max(0, x) as they
  // are. (v, lo): for a NaN the instruction gives its second operand, as
  // std::min(lo, v) keeps lo.
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= in; k += 8) {
    const __m256 v = _mm256_loadu_ps(x + k);
    lo = _mm256_min_ps(v, lo);
    hi = _mm256_max_ps(v, hi);
  }
  if (k < in) {
    const __m256 v = _mm256_maskload_ps(x + k, LanesBelow(k, in));
    lo = _mm256_min_ps(v, lo);
    hi = _mm256_max_ps(v, hi);
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
    StoreGroups(_mm_packus_epi16(words, words), groups - g < 2 ? 1 : 2, group_stride,
                u + g * group_stride);
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

void Int8QuantizeWeightRowAvx2(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                               int8_t* q, float* scale, int32_t* level_sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 largest = _mm256_setzero_ps();
  for (int64_t k = 0; k < in; k += 8) {
    const __m256 v = _mm256_maskload_ps(w + k, LanesBelow(k, in));
    largest = _mm256_max_ps(_mm256_andnot_ps(sign, v), largest);  // As std::max(largest, |v|).
  }
  const float s = HorizontalMax(largest) / 127.0f;
  const __m256 step = _mm256_set1_ps(s), limit = _mm256_set1_ps(127.0f);
  const __m256 half = _mm256_set1_ps(0.5f);
  __m256i sum = _mm256_setzero_si256();
  for (int64_t g = 0; g < groups; g += 2) {
    // All levels 0 past `in`, and everywhere in a row of zeros.
    const __m256i valid = s > 0 ? LanesBelow(4 * g, in) : _mm256_setzero_si256();
    __m256 v = _mm256_div_ps(_mm256_maskload_ps(w + 4 * g, valid), step);
    v = _mm256_max_ps(_mm256_min_ps(v, limit), _mm256_sub_ps(_mm256_setzero_ps(), limit));
    // + copysign(0.5, v), then truncation: half away from zero (a -0 gives
    // -0.5 where the scalar adds 0.5; both truncate to 0).
    v = _mm256_add_ps(v, _mm256_or_ps(_mm256_and_ps(v, sign), half));
    const __m256i levels = _mm256_cvttps_epi32(_mm256_and_ps(v, _mm256_castsi256_ps(valid)));
    sum = _mm256_add_epi32(sum, levels);
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(levels), _mm256_extracti128_si256(levels, 1));
    StoreGroups(_mm_packs_epi16(words, words), groups - g < 2 ? 1 : 2, group_stride,
                q + g * group_stride);
  }
  __m128i total = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
  total = _mm_add_epi32(total, _mm_shuffle_epi32(total, 0x4E));
  total = _mm_add_epi32(total, _mm_shuffle_epi32(total, 0xB1));
  *scale = s;
  *level_sum = _mm_cvtsi128_si32(total);
}

}  // namespace tfm
#pragma GCC pop_options
