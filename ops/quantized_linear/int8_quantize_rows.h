// The activations' per-row quantization that quantized_linear runs on every
// call, and the weights' (quantized_linear.h). Activations: x[r, :] ~ sx (u - zp), u in [0,
// levels], over [min(0, x), max(0, x)], so that 0 is exact (padding and ReLU zeros) and every x
// lies within sx / 2 of its level.
//
// One function per instruction set, each giving the scalar one's bytes and
// scales exactly (a test compares them): the same range (min and max are
// exact in any order), the same scale (Int8RowScaleFor, shared), and per
// element the same two roundings, x * inverse then + zp, clamped, + 0.5,
// truncated. The library compiles with -ffp-contract=off so that no
// compiler fuses that multiply and add into one FMA (one rounding) in some
// copies and not in others. The vector copies exist because at decoding's
// few rows this pass costs as much as the int8 product itself when scalar.
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace tfm {

// One row's step sx, its inverse and its zero point zp (a whole number).
struct Int8RowScale {
  float scale = 0, inverse = 0, zero_point = 0;
};

// The row's scale from its range [lo, hi] (lo <= 0 <= hi).
inline Int8RowScale Int8RowScaleFor(float lo, float hi, int levels) {
  Int8RowScale s;
  if (hi > lo) {  // Else all zeros: any scale will do.
    const float top = static_cast<float>(levels);
    s.scale = (hi - lo) / top;
    s.inverse = 1.0f / s.scale;
    s.zero_point = std::clamp(std::nearbyint(-lo * s.inverse), 0.0f, top);
  }
  return s;
}

// Quantizes row x [in] into `groups` groups of 4 levels, group g at
// u + g * group_stride (quantized_linear's [groups, rows, 4] layout: the
// stride is 4 rows' worth of bytes), levels past `in` 0; returns the
// row's zero point and scale. NaN inputs give unspecified levels.
using Int8QuantizeRowFn = void (*)(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                                   int levels, uint8_t* u, int32_t* zero_point, float* scale);

void Int8QuantizeRowScalar(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale);
// AVX2 (8 floats a step) and AVX-512 F/BW/VL (16 a step, masked tails).
void Int8QuantizeRowAvx2(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                         int levels, uint8_t* u, int32_t* zero_point, float* scale);
void Int8QuantizeRowAvx512(const float* x, int64_t in, int64_t groups, int64_t group_stride,
                           int levels, uint8_t* u, int32_t* zero_point, float* scale);

// The weights' quantization (once per search, quantize_linear_weight): one
// output row w [in], symmetric, its largest magnitude to 127 (-128 left
// out so that -q is always representable): scale = max |w| / 127, levels
// round(w / scale) (half away from zero) in [-127, 127], written as
// `groups` groups of 4 at q + g * group_stride (the packed layout's), 0
// past `in`; returns the scale and the levels' sum (the zero-point
// correction's row_sums). Every copy gives the scalar one's bytes exactly
// (a division, a clamp and a truncation round the same in any of them).
using Int8QuantizeWeightRowFn = void (*)(const float* w, int64_t in, int64_t groups,
                                         int64_t group_stride, int8_t* q, float* scale,
                                         int32_t* level_sum);

void Int8QuantizeWeightRowScalar(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                                 int8_t* q, float* scale, int32_t* level_sum);
void Int8QuantizeWeightRowAvx2(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                               int8_t* q, float* scale, int32_t* level_sum);
void Int8QuantizeWeightRowAvx512(const float* w, int64_t in, int64_t groups, int64_t group_stride,
                                 int8_t* q, float* scale, int32_t* level_sum);

}  // namespace tfm

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_QUANTIZE_ROWS_H_
