// Isa::Finish (int8_panels_body.h) for 256-bit vectors, shared by the AVX2
// and AVX-VNNI kernels: included inside their target regions and anonymous
// namespaces (see int8_panels_body.h for why).
#ifndef TFM_OPS_QUANTIZED_LINEAR_INT8_YMM_FINISH_H_
#define TFM_OPS_QUANTIZED_LINEAR_INT8_YMM_FINISH_H_

struct YmmFinish {
  static constexpr int kLanes = 8;
  using Acc = __m256i;
  using W = __m256i;
  static Acc Zero() { return _mm256_setzero_si256(); }
  static W Load(const int8_t* w) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)); }
  static Acc Broadcast(const uint8_t* x) {
    int32_t four;
    __builtin_memcpy(&four, x, sizeof(four));
    return _mm256_set1_epi32(four);
  }
  // sx * scale * (acc - zp * row_sum) + bias: the integer correction is
  // exact, then one rounding to float. `stream`: a non-temporal store where
  // y is 32-byte aligned (Int8Product::stream_y).
  static void Finish(Acc acc, int32_t zp, float sx, const float* scales, const int32_t* row_sums,
                     const float* bias, bool relu, bool stream, float* y) {
    const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row_sums));
    const __m256i exact = _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(zp), sums));
    __m256 out = _mm256_mul_ps(_mm256_cvtepi32_ps(exact),
                               _mm256_mul_ps(_mm256_set1_ps(sx), _mm256_loadu_ps(scales)));
    if (bias != nullptr) out = _mm256_add_ps(out, _mm256_loadu_ps(bias));
    if (relu) out = _mm256_max_ps(out, _mm256_setzero_ps());
    if (stream && (reinterpret_cast<uintptr_t>(y) & 31) == 0) {
      _mm256_stream_ps(y, out);
    } else {
      _mm256_storeu_ps(y, out);
    }
  }
};

#endif  // TFM_OPS_QUANTIZED_LINEAR_INT8_YMM_FINISH_H_
