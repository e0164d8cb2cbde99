// The reference quantization of one row (int8_quantize_rows.h), plain C++.
#include "ops/quantized_linear/int8_quantize_rows.h"

#include <algorithm>
#include <cstdint>

namespace tfm {

void Int8QuantizeRowScalar(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale) {
  float lo = 0, hi = 0;
  for (int64_t k = 0; k < in; ++k) {
    lo = std::min(lo, x[k]);
    hi = std::max(hi, x[k]);
  }
  const Int8RowScale s = Int8RowScaleFor(lo, hi, levels);
  const float top = static_cast<float>(levels);
  // Rounding half up by truncation of a non-negative value: baseline x86-64
  // has no rounding instruction, and std::nearbyint would be a library call
  // per element. (zp is whole, so this is round(x / sx) + zp but for ties.)
  for (int64_t k = 0; k < groups * 4; ++k) {
    const float level =
        k < in ? std::clamp(x[k] * s.inverse + s.zero_point, 0.0f, top) + 0.5f : 0.0f;
    u[(k / 4) * group_stride + k % 4] = static_cast<uint8_t>(level);
  }
  *zero_point = static_cast<int32_t>(s.zero_point);
  *scale = s.scale;
}

}  // namespace tfm
