// The quantizations of one row (int8_quantize_rows.h) with AVX-512: 16
// floats, so 4 groups of 4 levels, a step; the row's tail through masked
// loads (int8_quantize_rows_body.h).
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

struct Isa {
  static constexpr int kLanes = 16;
  using F = __m512;
  using I = __m512i;
  using Mask = __mmask16;
  static Mask LanesBelow(int64_t k, int64_t in) {
    const int64_t left = in - k;
    if (left >= 16) return 0xFFFF;
    return left <= 0 ? 0 : static_cast<Mask>((1u << left) - 1);
  }
  static Mask NoLanes() { return 0; }
  static F Load(const float* x, Mask m) { return _mm512_maskz_loadu_ps(m, x); }
  static F Set(float v) { return _mm512_set1_ps(v); }
  static F Add(F a, F b) { return _mm512_add_ps(a, b); }
  static F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F Div(F a, F b) { return _mm512_div_ps(a, b); }
  static F Min(F v, F bound) { return _mm512_min_ps(v, bound); }
  static F Max(F v, F bound) { return _mm512_max_ps(v, bound); }
  static F Abs(F v) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), v); }
  static F PlusHalfAwayFromZero(F v) {
    const F sign = _mm512_and_ps(v, _mm512_set1_ps(-0.0f));
    return _mm512_add_ps(v, _mm512_or_ps(sign, _mm512_set1_ps(0.5f)));
  }
  static I Truncate(F v, Mask m) { return _mm512_maskz_cvttps_epi32(m, v); }
  static float ReduceMin(F v) { return _mm512_reduce_min_ps(v); }
  static float ReduceMax(F v) { return _mm512_reduce_max_ps(v); }
  static I AddI(I a, I b) { return _mm512_add_epi32(a, b); }
  static int32_t ReduceAdd(I v) { return _mm512_reduce_add_epi32(v); }
  static __m128i PackU8(I v) { return _mm512_cvtepi32_epi8(v); }  // Levels fit: no saturation.
  static __m128i PackS8(I v) { return _mm512_cvtepi32_epi8(v); }
};

#include "ops/quantized_linear/int8_quantize_rows_body.h"

}  // namespace

void Int8QuantizeRowAvx512(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  QuantizeActivationRow(x, in, groups, group_stride, levels, u, zero_point, scale);
}

void Int8QuantizeWeightRowAvx512(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                                 int8_t* q, float* scale, int32_t* level_sum) {
  QuantizeWeightRow(w, in, groups, group_stride, q, scale, level_sum);
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options
