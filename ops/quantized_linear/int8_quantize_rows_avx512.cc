// The quantizations of one row (int8_quantize_rows.h) with AVX-512: 16
// floats, so 4 groups of 4 levels, a step; the row's tail through masked
// loads.
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_quantize_rows.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl")
// GCC 12's false -Wmaybe-uninitialized on AVX-512 intrinsics (see
// int8_panels_avx512_vnni.cc), silenced for this file only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace tfm {
namespace {

// Lanes k .. k + 15 that lie below `in`.
__mmask16 LanesBelow(int64_t k, int64_t in) {
  const int64_t left = in - k;
  if (left >= 16) return 0xFFFF;
  return left <= 0 ? 0 : static_cast<__mmask16>((1u << left) - 1);
}

// The first `count` (<= 4) groups of 4 bytes of `bytes` to `to`, `stride`
// bytes apart.
void StoreGroups(__m128i bytes, int64_t count, int64_t stride, void* to) {
  char* out = static_cast<char*>(to);
  if (count == 4 && stride == 4) {  // One row: its groups are contiguous.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes);
    return;
  }
  alignas(16) char four_groups[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(four_groups), bytes);
  for (int64_t j = 0; j < count; ++j) __builtin_memcpy(out + j * stride, four_groups + 4 * j, 4);
}

}  // namespace

void Int8QuantizeRowAvx512(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  // Masked-off lanes load 0, which leaves min(0, x) and max(0, x) as they
  // are. (v, lo): for a NaN the instruction gives its second operand, as
  // std::min(lo, v) keeps lo.
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; k += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(LanesBelow(k, in), x + k);
    lo = _mm512_min_ps(v, lo);
    hi = _mm512_max_ps(v, hi);
  }
  const Int8RowScale s =
      Int8RowScaleFor(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi), levels);
  const __m512 inverse = _mm512_set1_ps(s.inverse), zp = _mm512_set1_ps(s.zero_point);
  const __m512 top = _mm512_set1_ps(static_cast<float>(levels));
  const __m512 half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  for (int64_t g = 0; g < groups; g += 4) {
    const __mmask16 valid = LanesBelow(4 * g, in);
    __m512 v = _mm512_maskz_loadu_ps(valid, x + 4 * g);
    v = _mm512_add_ps(_mm512_mul_ps(v, inverse), zp);
    v = _mm512_add_ps(_mm512_min_ps(_mm512_max_ps(v, zero), top), half);
    // Levels past `in` are 0 (masked off before the conversion).
    const __m128i bytes = _mm512_cvtepi32_epi8(_mm512_maskz_cvttps_epi32(valid, v));
    StoreGroups(bytes, groups - g < 4 ? groups - g : 4, group_stride, u + g * group_stride);
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

void Int8QuantizeWeightRowAvx512(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                                 int8_t* q, float* scale, int32_t* level_sum) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512 largest = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; k += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(LanesBelow(k, in), w + k);
    largest = _mm512_max_ps(_mm512_andnot_ps(sign, v), largest);  // As std::max(largest, |v|).
  }
  const float s = _mm512_reduce_max_ps(largest) / 127.0f;
  const __m512 step = _mm512_set1_ps(s), limit = _mm512_set1_ps(127.0f);
  const __m512 half = _mm512_set1_ps(0.5f);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t g = 0; g < groups; g += 4) {
    // All levels 0 past `in`, and everywhere in a row of zeros.
    const __mmask16 valid = s > 0 ? LanesBelow(4 * g, in) : 0;
    __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(valid, w + 4 * g), step);
    v = _mm512_max_ps(_mm512_min_ps(v, limit), _mm512_sub_ps(_mm512_setzero_ps(), limit));
    // + copysign(0.5, v), then truncation: half away from zero (a -0 gives
    // -0.5 where the scalar adds 0.5; both truncate to 0).
    v = _mm512_add_ps(v, _mm512_or_ps(_mm512_and_ps(v, sign), half));
    const __m512i levels = _mm512_maskz_cvttps_epi32(valid, v);
    sum = _mm512_add_epi32(sum, levels);
    StoreGroups(_mm512_cvtepi32_epi8(levels), groups - g < 4 ? groups - g : 4, group_stride,
                q + g * group_stride);
  }
  *scale = s;
  *level_sum = _mm512_reduce_add_epi32(sum);
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options
