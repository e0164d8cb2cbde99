// The vector types every CPU kernel is written with: float and int32 lanes
// of the instruction set the file is compiled for (ops/cpu_math/isa.h), 8
// with AVX2 and 16 with AVX-512. A kernel written once over VecF / VecI /
// Mask and kLanes is compiled for both; the functions below are the only
// place that names an intrinsic of either width, so the AVX-512 build (which
// the development machine cannot run) is as thin as possible over code the
// AVX2 build tests.
//
// Masks: comparisons give a Mask (lanes of all-ones on AVX2, an opmask
// register on AVX-512); tails use LoadFirst / StoreFirst, which neither read
// nor write past the n-th lane.
#ifndef TFM_OPS_CPU_MATH_VEC_H_
#define TFM_OPS_CPU_MATH_VEC_H_

#include <immintrin.h>

#include <cstdint>

#include "ops/cpu_math/isa.h"

TFM_ISA_BEGIN
namespace simd {

#if defined(TFM_KERNEL_ISA_AVX512)

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (`__m512 __Y =
// __Y;`), which -Wmaybe-uninitialized (or -Wuninitialized, as inlining
// falls) reports wherever they are inlined into a kernel (GCC bug 105593,
// fixed in GCC 13). A false positive: the wrappers below are the only code
// this silences (GCC checks every inlined frame).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

inline constexpr int kLanes = 16;

struct VecF {
  __m512 raw;
};
struct VecI {
  __m512i raw;
};
struct Mask {
  __mmask16 raw;
};

inline VecF Zero() { return {_mm512_setzero_ps()}; }
inline VecF Set(float x) { return {_mm512_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void Store(VecF v, float* p) { _mm512_storeu_ps(p, v.raw); }
inline Mask FirstN(int64_t n) {
  return {static_cast<__mmask16>(n >= kLanes ? 0xFFFF : (1u << n) - 1)};
}
inline VecF LoadFirst(const float* p, int64_t n) { return {_mm512_maskz_loadu_ps(FirstN(n).raw, p)}; }
inline void StoreFirst(VecF v, float* p, int64_t n) { _mm512_mask_storeu_ps(p, FirstN(n).raw, v.raw); }
// IEEE binary16 lanes (tfm::Half's bits) widened to floats, and floats
// rounded to nearest even into them (F16C): the 16-bit key/value caches of
// CPU decoding.
inline VecF LoadHalf(const uint16_t* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline VecF LoadFirstHalf(const uint16_t* p, int64_t n) {
  return {_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(FirstN(n).raw, p))};
}
inline void StoreHalf(VecF v, uint16_t* p) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtps_ph(v.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void StoreFirstHalf(VecF v, uint16_t* p, int64_t n) {
  _mm256_mask_storeu_epi16(p, FirstN(n).raw,
                           _mm512_cvtps_ph(v.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

inline VecF operator+(VecF a, VecF b) { return {_mm512_add_ps(a.raw, b.raw)}; }
inline VecF operator-(VecF a, VecF b) { return {_mm512_sub_ps(a.raw, b.raw)}; }
inline VecF operator*(VecF a, VecF b) { return {_mm512_mul_ps(a.raw, b.raw)}; }
inline VecF operator/(VecF a, VecF b) { return {_mm512_div_ps(a.raw, b.raw)}; }
inline VecF MulAdd(VecF a, VecF b, VecF c) { return {_mm512_fmadd_ps(a.raw, b.raw, c.raw)}; }
inline VecF NegMulAdd(VecF a, VecF b, VecF c) { return {_mm512_fnmadd_ps(a.raw, b.raw, c.raw)}; }
inline VecF Min(VecF a, VecF b) { return {_mm512_min_ps(a.raw, b.raw)}; }
inline VecF Max(VecF a, VecF b) { return {_mm512_max_ps(a.raw, b.raw)}; }
inline VecF Sqrt(VecF a) { return {_mm512_sqrt_ps(a.raw)}; }
inline VecF RoundNearest(VecF a) {
  return {_mm512_roundscale_ps(a.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline float ReduceSum(VecF v) {
  // Halves added pairwise, as the AVX2 tree below: a fixed order.
  const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(v.raw), _mm512_extractf32x8_ps(v.raw, 1));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}
inline float ReduceMax(VecF v) { return _mm512_reduce_max_ps(v.raw); }
// Lane j: ReduceSum(v[j]), the same bits, for kLanes vectors at once:
// every lane's additions pair the same elements in the same tree as
// ReduceSum's (halves, then quarters, then pairs, then the last two), but
// sixteen reductions share each level's shuffles and adds (about 45 vector
// instructions instead of about 130). Lane 4q + r of the last level holds
// vector 4r + q's sum, put back in order by one permute.
inline VecF ReduceSums(const VecF* v) {
  __m512 halves[8];  // [v[2m]'s s_0..7 | v[2m + 1]'s], s_i = v_i + v_{i+8}.
  for (int m = 0; m < 8; ++m) {
    const __m512 a = v[2 * m].raw, b = v[2 * m + 1].raw;
    halves[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                              _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  __m512 quarters[4];  // Quarter q: v[4n + q]'s h_0..3, h_i = s_i + s_{i+4}.
  for (int n = 0; n < 4; ++n) {
    const __m512 a = halves[2 * n], b = halves[2 * n + 1];
    quarters[n] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                                _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  __m512 pairs[2];  // Quarter q: v[8p + q]'s h_0 + h_2, h_1 + h_3, then v[8p + 4 + q]'s.
  for (int p = 0; p < 2; ++p) {
    const __m512 a = quarters[2 * p], b = quarters[2 * p + 1];
    pairs[p] = _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  const __m512 sums =
      _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return {_mm512_permutexvar_ps(order, sums)};
}

inline float First(VecF v) { return _mm512_cvtss_f32(v.raw); }

inline Mask Ge(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.raw, b.raw, _CMP_GE_OQ)}; }
inline Mask Gt(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.raw, b.raw, _CMP_GT_OQ)}; }
inline Mask NotLe(VecF a, VecF b) { return {_mm512_cmp_ps_mask(a.raw, b.raw, _CMP_NLE_UQ)}; }
inline Mask IsNaN(VecF a) { return {_mm512_cmp_ps_mask(a.raw, a.raw, _CMP_UNORD_Q)}; }
inline Mask operator|(Mask a, Mask b) { return {static_cast<__mmask16>(a.raw | b.raw)}; }
inline VecF IfThenElseZero(Mask m, VecF v) { return {_mm512_maskz_mov_ps(m.raw, v.raw)}; }
inline bool AnyTrue(Mask m) { return m.raw != 0; }
// Bit j = lane j.
inline uint32_t Bits(Mask m) { return m.raw; }

inline VecI SetI(uint32_t x) { return {_mm512_set1_epi32(static_cast<int32_t>(x))}; }
inline VecI LoadI(const uint32_t* p) { return {_mm512_loadu_si512(p)}; }
inline void StoreI(VecI v, uint32_t* p) { _mm512_storeu_si512(p, v.raw); }
inline VecI operator+(VecI a, VecI b) { return {_mm512_add_epi32(a.raw, b.raw)}; }
inline VecI operator^(VecI a, VecI b) { return {_mm512_xor_si512(a.raw, b.raw)}; }
inline VecI operator&(VecI a, VecI b) { return {_mm512_and_si512(a.raw, b.raw)}; }
template <int kBits>
inline VecI ShiftLeft(VecI a) {
  return {_mm512_slli_epi32(a.raw, kBits)};
}
template <int kBits>
inline VecI ShiftRight(VecI a) {  // Logical.
  return {_mm512_srli_epi32(a.raw, kBits)};
}
inline Mask Eq(VecI a, VecI b) { return {_mm512_cmpeq_epi32_mask(a.raw, b.raw)}; }
inline VecF ConvertToF(VecI a) { return {_mm512_cvtepi32_ps(a.raw)}; }
inline VecI RoundToInt(VecF a) { return {_mm512_cvtps_epi32(a.raw)}; }
inline VecF BitCastToF(VecI a) { return {_mm512_castsi512_ps(a.raw)}; }

// The high and low 32 bits of the unsigned products a[j] * b[j]. mul_epu32
// multiplies the even lanes only, so the odd lanes are shifted down for a
// second multiply and the halves blended back into lane order.
inline void MulHiLo(VecI a, VecI b, VecI* hi, VecI* lo) {
  const __m512i even = _mm512_mul_epu32(a.raw, b.raw);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a.raw, 32), b.raw);
  lo->raw = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  hi->raw = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(even, 32), odd);
}

#pragma GCC diagnostic pop

#else  // AVX2

inline constexpr int kLanes = 8;

struct VecF {
  __m256 raw;
};
struct VecI {
  __m256i raw;
};
struct Mask {
  __m256 raw;  // All-ones lanes where true.
};

inline VecF Zero() { return {_mm256_setzero_ps()}; }
inline VecF Set(float x) { return {_mm256_set1_ps(x)}; }
inline VecF Load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void Store(VecF v, float* p) { _mm256_storeu_ps(p, v.raw); }
inline __m256i FirstNLanes(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < kLanes ? n : kLanes)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline Mask FirstN(int64_t n) { return {_mm256_castsi256_ps(FirstNLanes(n))}; }
inline VecF LoadFirst(const float* p, int64_t n) { return {_mm256_maskload_ps(p, FirstNLanes(n))}; }
inline void StoreFirst(VecF v, float* p, int64_t n) { _mm256_maskstore_ps(p, FirstNLanes(n), v.raw); }
inline VecF LoadHalf(const uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
// AVX2 has no masked 16-bit moves: the tail goes through a zeroed vector.
inline VecF LoadFirstHalf(const uint16_t* p, int64_t n) {
  alignas(16) uint16_t lanes[kLanes] = {};
  for (int64_t i = 0; i < n && i < kLanes; ++i) lanes[i] = p[i];
  return LoadHalf(lanes);
}
inline void StoreHalf(VecF v, uint16_t* p) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph(v.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void StoreFirstHalf(VecF v, uint16_t* p, int64_t n) {
  alignas(16) uint16_t lanes[kLanes];
  StoreHalf(v, lanes);
  for (int64_t i = 0; i < n && i < kLanes; ++i) p[i] = lanes[i];
}

inline VecF operator+(VecF a, VecF b) { return {_mm256_add_ps(a.raw, b.raw)}; }
inline VecF operator-(VecF a, VecF b) { return {_mm256_sub_ps(a.raw, b.raw)}; }
inline VecF operator*(VecF a, VecF b) { return {_mm256_mul_ps(a.raw, b.raw)}; }
inline VecF operator/(VecF a, VecF b) { return {_mm256_div_ps(a.raw, b.raw)}; }
inline VecF MulAdd(VecF a, VecF b, VecF c) { return {_mm256_fmadd_ps(a.raw, b.raw, c.raw)}; }
inline VecF NegMulAdd(VecF a, VecF b, VecF c) { return {_mm256_fnmadd_ps(a.raw, b.raw, c.raw)}; }
inline VecF Min(VecF a, VecF b) { return {_mm256_min_ps(a.raw, b.raw)}; }
inline VecF Max(VecF a, VecF b) { return {_mm256_max_ps(a.raw, b.raw)}; }
inline VecF Sqrt(VecF a) { return {_mm256_sqrt_ps(a.raw)}; }
inline VecF RoundNearest(VecF a) {
  return {_mm256_round_ps(a.raw, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
inline float ReduceSum(VecF v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v.raw), _mm256_extractf128_ps(v.raw, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}
// Lane j: ReduceSum(v[j]), the same bits, for kLanes vectors at once (as
// the AVX-512 version: ReduceSum's tree, its shuffles shared). Lane 4q + r
// of the last level holds vector 2r + q's sum.
inline VecF ReduceSums(const VecF* v) {
  __m256 halves[4];  // [v[2m]'s h_0..3 | v[2m + 1]'s], h_i = v_i + v_{i+4}.
  for (int m = 0; m < 4; ++m) {
    const __m256 a = v[2 * m].raw, b = v[2 * m + 1].raw;
    halves[m] = _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20),
                              _mm256_permute2f128_ps(a, b, 0x31));
  }
  __m256 pairs[2];  // Half q: v[4p + q]'s h_0 + h_2, h_1 + h_3, then v[4p + 2 + q]'s.
  for (int p = 0; p < 2; ++p) {
    const __m256 a = halves[2 * p], b = halves[2 * p + 1];
    pairs[p] = _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  const __m256 sums =
      _mm256_add_ps(_mm256_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm256_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(3, 1, 3, 1)));
  return {_mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))};
}
inline float ReduceMax(VecF v) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(v.raw), _mm256_extractf128_ps(v.raw, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

inline float First(VecF v) { return _mm256_cvtss_f32(v.raw); }

inline Mask Ge(VecF a, VecF b) { return {_mm256_cmp_ps(a.raw, b.raw, _CMP_GE_OQ)}; }
inline Mask Gt(VecF a, VecF b) { return {_mm256_cmp_ps(a.raw, b.raw, _CMP_GT_OQ)}; }
inline Mask NotLe(VecF a, VecF b) { return {_mm256_cmp_ps(a.raw, b.raw, _CMP_NLE_UQ)}; }
inline Mask IsNaN(VecF a) { return {_mm256_cmp_ps(a.raw, a.raw, _CMP_UNORD_Q)}; }
inline Mask operator|(Mask a, Mask b) { return {_mm256_or_ps(a.raw, b.raw)}; }
inline VecF IfThenElseZero(Mask m, VecF v) { return {_mm256_and_ps(m.raw, v.raw)}; }
inline bool AnyTrue(Mask m) { return _mm256_movemask_ps(m.raw) != 0; }
inline uint32_t Bits(Mask m) { return static_cast<uint32_t>(_mm256_movemask_ps(m.raw)); }

inline VecI SetI(uint32_t x) { return {_mm256_set1_epi32(static_cast<int32_t>(x))}; }
inline VecI LoadI(const uint32_t* p) {
  return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))};
}
inline void StoreI(VecI v, uint32_t* p) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v.raw); }
inline VecI operator+(VecI a, VecI b) { return {_mm256_add_epi32(a.raw, b.raw)}; }
inline VecI operator^(VecI a, VecI b) { return {_mm256_xor_si256(a.raw, b.raw)}; }
inline VecI operator&(VecI a, VecI b) { return {_mm256_and_si256(a.raw, b.raw)}; }
template <int kBits>
inline VecI ShiftLeft(VecI a) {
  return {_mm256_slli_epi32(a.raw, kBits)};
}
template <int kBits>
inline VecI ShiftRight(VecI a) {  // Logical.
  return {_mm256_srli_epi32(a.raw, kBits)};
}
inline Mask Eq(VecI a, VecI b) { return {_mm256_castsi256_ps(_mm256_cmpeq_epi32(a.raw, b.raw))}; }
inline VecF ConvertToF(VecI a) { return {_mm256_cvtepi32_ps(a.raw)}; }
inline VecI RoundToInt(VecF a) { return {_mm256_cvtps_epi32(a.raw)}; }
inline VecF BitCastToF(VecI a) { return {_mm256_castsi256_ps(a.raw)}; }

inline void MulHiLo(VecI a, VecI b, VecI* hi, VecI* lo) {
  const __m256i even = _mm256_mul_epu32(a.raw, b.raw);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a.raw, 32), b.raw);
  lo->raw = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  hi->raw = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

#endif  // TFM_KERNEL_ISA_AVX512

// One value broadcast from memory (the micro-kernels' A operand).
inline VecF LoadBroadcast(const float* p) { return Set(*p); }

// One loop body for the whole vectors and the partial last one:
//   ForEachVector(begin, end, [&](int64_t i, auto lanes) {
//     Store(f(Load(x + i, lanes)), y + i, lanes);
//   });
// lanes is AllLanes (plain loads and stores) or FirstLanes (masked ones:
// nothing read or written past end, masked-off lanes read as 0). Every
// element then goes through the same arithmetic whatever its position.
struct AllLanes {};
struct FirstLanes {
  int64_t n;
};
inline VecF Load(const float* p, AllLanes) { return Load(p); }
inline VecF Load(const float* p, FirstLanes lanes) { return LoadFirst(p, lanes.n); }
inline void Store(VecF v, float* p, AllLanes) { Store(v, p); }
inline void Store(VecF v, float* p, FirstLanes lanes) { StoreFirst(v, p, lanes.n); }

template <typename F>
inline void ForEachVector(int64_t begin, int64_t end, F body) {
  int64_t i = begin;
  for (; i + kLanes <= end; i += kLanes) body(i, AllLanes{});
  if (i < end) body(i, FirstLanes{end - i});
}

}  // namespace simd
TFM_ISA_END

#endif  // TFM_OPS_CPU_MATH_VEC_H_
