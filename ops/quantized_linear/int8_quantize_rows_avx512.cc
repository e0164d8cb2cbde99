// One row's quantization (int8_quantize_rows.h) with AVX-512: 16 floats, so
// 4 groups of 4 levels, a step; the row's tail through masked loads.
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

}  // namespace

void Int8QuantizeRowAvx512(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  // Masked-off lanes load 0, which leaves min(0, x) and max(0, x) as they are.
  __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
  for (int64_t k = 0; k < in; k += 16) {
    const __m512 v = _mm512_maskz_loadu_ps(LanesBelow(k, in), x + k);
    lo = _mm512_min_ps(lo, v);
    hi = _mm512_max_ps(hi, v);
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
    const int64_t count = groups - g < 4 ? groups - g : 4;
    if (count == 4 && group_stride == 4) {  // One row: its groups are contiguous.
      _mm_storeu_si128(reinterpret_cast<__m128i*>(u + g * 4), bytes);
      continue;
    }
    alignas(16) uint8_t four_groups[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(four_groups), bytes);
    for (int64_t j = 0; j < count; ++j) {
      __builtin_memcpy(u + (g + j) * group_stride, four_groups + 4 * j, 4);
    }
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options
