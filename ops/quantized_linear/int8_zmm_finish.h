// Isa::Finish (int8_panels_body.h) for 512-bit vectors, shared by the
// AVX-512 VNNI and AMX kernels: included inside their target regions and
// anonymous namespaces (see int8_panels_body.h for why).
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_ZMM_FINISH_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_ZMM_FINISH_H_

struct ZmmFinish {
  static constexpr int kLanes = 16;
  using Acc = __m512i;
  using W = __m512i;
  // sx * scale * (acc - zp * row_sum) + bias: the integer correction is
  // exact, then one rounding to float. `stream`: a non-temporal store where
  // y is 64-byte aligned (Int8Product::stream_y).
  static void Finish(Acc acc, int32_t zp, float sx, const float* scales, const int32_t* row_sums,
                     const float* bias, bool relu, bool stream, float* y) {
    const __m512i sums = _mm512_loadu_si512(row_sums);
    const __m512i exact = _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(zp), sums));
    __m512 out = _mm512_mul_ps(_mm512_cvtepi32_ps(exact),
                               _mm512_mul_ps(_mm512_set1_ps(sx), _mm512_loadu_ps(scales)));
    if (bias != nullptr) out = _mm512_add_ps(out, _mm512_loadu_ps(bias));
    if (relu) out = _mm512_max_ps(out, _mm512_setzero_ps());
    if (stream && (reinterpret_cast<uintptr_t>(y) & 63) == 0) {
      _mm512_stream_ps(y, out);
    } else {
      _mm512_storeu_ps(y, out);
    }
  }
};

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_ZMM_FINISH_H_
