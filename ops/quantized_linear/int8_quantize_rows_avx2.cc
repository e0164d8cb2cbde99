// The quantizations of one row (int8_quantize_rows.h) with AVX2: 8 floats,
// so 2 groups of 4 levels, a step; the row's tail through masked loads
// (int8_quantize_rows_body.h).
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_quantize_rows.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2")
namespace tfm {
namespace {

struct Isa {
  static constexpr int kLanes = 8;
  using F = __m256;
  using I = __m256i;
  using Mask = __m256i;  // All ones in the lanes kept.
  static Mask LanesBelow(int64_t k, int64_t in) {
    const int64_t left = in - k;
    const int32_t count = left >= 8 ? 8 : (left <= 0 ? 0 : static_cast<int32_t>(left));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static Mask NoLanes() { return _mm256_setzero_si256(); }
  static F Load(const float* x, Mask m) { return _mm256_maskload_ps(x, m); }
  static F Set(float v) { return _mm256_set1_ps(v); }
  static F Add(F a, F b) { return _mm256_add_ps(a, b); }
  static F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F Div(F a, F b) { return _mm256_div_ps(a, b); }
  static F Min(F v, F bound) { return _mm256_min_ps(v, bound); }
  static F Max(F v, F bound) { return _mm256_max_ps(v, bound); }
  static F Abs(F v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static F PlusHalfAwayFromZero(F v) {
    const F sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
    return _mm256_add_ps(v, _mm256_or_ps(sign, _mm256_set1_ps(0.5f)));
  }
  static I Truncate(F v, Mask m) {
    return _mm256_cvttps_epi32(_mm256_and_ps(v, _mm256_castsi256_ps(m)));
  }
  static float ReduceMin(F v) {
    __m128 m = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_min_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_min_ss(m, _mm_movehdup_ps(m)));
  }
  static float ReduceMax(F v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
  }
  static I AddI(I a, I b) { return _mm256_add_epi32(a, b); }
  static int32_t ReduceAdd(I v) {
    __m128i total = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    total = _mm_add_epi32(total, _mm_shuffle_epi32(total, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(total, _mm_shuffle_epi32(total, 0xB1)));
  }
  // Levels fit their bytes: the saturating packs only narrow.
  static __m128i PackU8(I v) {
    const __m128i words =
        _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packus_epi16(words, words);
  }
  static __m128i PackS8(I v) {
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return _mm_packs_epi16(words, words);
  }
};

#include "ops/quantized_linear/int8_quantize_rows_body.h"

}  // namespace

void Int8QuantizeRowAvx2(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                         int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  QuantizeActivationRow(x, in, groups, group_stride, levels, u, zero_point, scale);
}

void Int8QuantizeWeightRowAvx2(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                               int8_t* q, float* scale, int32_t* level_sum) {
  QuantizeWeightRow(w, in, groups, group_stride, q, scale, level_sum);
}

}  // namespace tfm
#pragma GCC pop_options
