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
#pragma GCC diagnostic ignored "-Wuninitialized"
namespace tfm {
namespace {

#include "ops/quantized_linear/int8_zmm_finish.h"

struct Isa : ZmmFinish {
  // 12 x 2 accumulators, 2 weights and the broadcast: 27 of 32 registers.
  static constexpr int kRows = 12;
  static Acc Zero() { return _mm512_setzero_si512(); }
  static W Load(const int8_t* w) { return _mm512_loadu_si512(w); }
  static Acc Broadcast(const uint8_t* x) {
    int32_t four;
    __builtin_memcpy(&four, x, sizeof(four));
    return _mm512_set1_epi32(four);
  }
  static Acc Dot(Acc acc, Acc x, W w) { return _mm512_dpbusd_epi32(acc, x, w); }
};

#include "ops/quantized_linear/int8_panels_body.h"

}  // namespace

void Int8PanelsAvx512Vnni(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  Panels(product, first_panel, last_panel);
}

}  // namespace tfm
#pragma GCC diagnostic pop
#pragma GCC pop_options
