// The int8 product with AVX-512 VNNI: 512-bit vpdpbusd, one panel's group
// of 4 inputs x 16 columns per weight vector.
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_panels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (`__m512 __Y =
// __Y;`), which -Wmaybe-uninitialized reports wherever they are inlined
// (GCC bug 105593, fixed in GCC 13; as in ops/cpu_math/vec.h): a false
// positive, silenced for this file's kernels only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace tfm {
namespace {

struct Isa {
  static constexpr int kLanes = 16;
  // 12 x 2 accumulators, 2 weights and the broadcast: 27 of 32 registers.
  static constexpr int kRows = 12;
  using Acc = __m512i;
  using W = __m512i;
  static Acc Zero() { return _mm512_setzero_si512(); }
  static W Load(const int8_t* w) { return _mm512_loadu_si512(w); }
  static Acc Broadcast(const uint8_t* x) {
    int32_t four;
    __builtin_memcpy(&four, x, sizeof(four));
    return _mm512_set1_epi32(four);
  }
  static Acc Dot(Acc acc, Acc x, W w) { return _mm512_dpbusd_epi32(acc, x, w); }
  // sx * scale * (acc - zp * row_sum) + bias: the integer correction is
  // exact, then one rounding to float.
  static void Finish(Acc acc, int32_t zp, float sx, const float* scales, const int32_t* row_sums,
                     const float* bias, bool relu, float* y) {
    const __m512i exact =
        _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(zp), _mm512_loadu_si512(row_sums)));
    __m512 out = _mm512_mul_ps(_mm512_cvtepi32_ps(exact),
                               _mm512_mul_ps(_mm512_set1_ps(sx), _mm512_loadu_ps(scales)));
    if (bias != nullptr) out = _mm512_add_ps(out, _mm512_loadu_ps(bias));
    if (relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
    _mm512_storeu_ps(y, out);
  }
};

#include "ops/quantized_linear/int8_panels_body.h"

}  // namespace

void Int8PanelsAvx512Vnni(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  Panels(product, first_panel, last_panel);
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options
