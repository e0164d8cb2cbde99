// The int8 product with AVX-VNNI: 256-bit vpdpbusd (VEX), which adds each
// lane's four u8 x s8 products into int32 without an int16 step.
#include <immintrin.h>

#include <cstdint>

#include "ops/quantized_linear/int8_panels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,avxvnni")
namespace tfm {
namespace {

#include "ops/quantized_linear/int8_ymm_finish.h"

struct Isa : YmmFinish {
  // 6 x 2 accumulators, 2 weights and the broadcast: 15 of 16 registers.
  static constexpr int kRows = 6;
  static Acc Dot(Acc acc, Acc x, W w) { return _mm256_dpbusd_avx_epi32(acc, x, w); }
};

#include "ops/quantized_linear/int8_panels_body.h"

}  // namespace

void Int8PanelsAvxVnni(const Int8Product& product, int64_t first_panel, int64_t last_panel) {
  Panels(product, first_panel, last_panel);
}

}  // namespace tfm
#pragma GCC pop_options
