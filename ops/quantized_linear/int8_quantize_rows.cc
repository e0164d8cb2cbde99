// The reference quantizations of one row (int8_quantize_rows.h), plain C++.
#include "ops/quantized_linear/int8_quantize_rows.h"

#include <algorithm>
#include <cmath>
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

void Int8QuantizeWeightRowScalar(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                                 int8_t* q, float* scale, int32_t* level_sum) {
  float largest = 0;
  for (int64_t k = 0; k < in; ++k) largest = std::max(largest, std::abs(w[k]));
  const float s = largest / 127.0f;
  int32_t sum = 0;
  for (int64_t k = 0; k < groups * 4; ++k) {
    int8_t level = 0;
    if (k < in && s > 0) {
      // Half away from zero by truncation (no library call per weight).
      const float v = std::clamp(w[k] / s, -127.0f, 127.0f);
      level = static_cast<int8_t>(v + (v >= 0 ? 0.5f : -0.5f));
    }
    q[(k / 4) * group_stride + k % 4] = level;
    sum += level;
  }
  *scale = s;
  *level_sum = sum;
}

}  // namespace tfm
