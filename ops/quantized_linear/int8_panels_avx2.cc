// The int8 product for CPUs without VNNI: vpmaddubsw multiplies u8 x s8
// pairs and adds each pair into int16 (saturating), vpmaddwd with ones adds
// pairs of those into the int32 lanes. Activations use 7 bits here
// (Int8ActivationLevels), so a pair is at most 2 x 127 x 127 = 32258 and
// never saturates.
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_panels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2")
namespace tfm {
namespace {

#include "ops/quantized_linear/int8_ymm_finish.h"

struct Isa : YmmFinish {
  // 4 x 2 accumulators, 2 weights, the broadcast, the ones and the int16
  // products: 13 of 16 registers.
  static constexpr int kRows = 4;
  static Acc Dot(Acc acc, Acc x, W w) {
    const __m256i pairs = _mm256_maddubs_epi16(x, w);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
};

#include "ops/quantized_linear/int8_panels_body.h"

}  // namespace

void Int8PanelsAvx2(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  Panels(product, first_panel, last_panel);
}

}  // namespace tfm
#pragma GCC pop_options
