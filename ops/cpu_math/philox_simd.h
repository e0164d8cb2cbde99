// Philox4x32-10 for 8 consecutive blocks at once with AVX2, bit-identical to
// philox::Block (core/philox.h). Regenerating a dropout mask is dominated by
// the generator, and the scalar one spends most of its time on 32x32->64-bit
// multiplies that AVX2 does four at a time (_mm256_mul_epu32).
//
// Layout: the 8 blocks are kept "structure of arrays" (one register per
// counter word, one lane per block) while the rounds run, then transposed so
// that the 32 words come out in element order: element i of the run is
// block first_block + i / 4, lane i % 4, the layout of core/rng.h.
#ifndef TFM_OPS_CPU_MATH_PHILOX_SIMD_H_
#define TFM_OPS_CPU_MATH_PHILOX_SIMD_H_

#include <cstdint>

#include "core/philox.h"
#include "ops/cpu_math/simd_math.h"

namespace tfm {
namespace simd {

// Words produced per call: 8 blocks of 4.
inline constexpr int kPhiloxWords = 32;

#ifdef TFM_SIMD_AVX2

namespace internal {

// hi and lo halves of the 8 products a[j] * m (unsigned 32 x 32 -> 64).
// mul_epu32 multiplies the even lanes only, so the odd lanes are shifted down
// for a second multiply and the halves are blended back into lane order.
inline void MulHiLo8(__m256i a, __m256i m, __m256i* hi, __m256i* lo) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  *lo = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  *hi = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

}  // namespace internal

// The 32 words of blocks first_block .. first_block + 7 of (seed, stream), in
// element order: out[0] holds elements 0..7, ..., out[3] elements 24..31.
inline void PhiloxWords32(uint64_t seed, uint64_t stream, uint64_t first_block,
                          __m256i out[4]) {
  // Counter low 64 bits = first_block + lane, with the carry into the high
  // word done per lane (the run may straddle a 2^32 boundary).
  alignas(32) uint32_t lo_words[8], hi_words[8];
  for (int lane = 0; lane < 8; ++lane) {
    const uint64_t block = first_block + static_cast<uint64_t>(lane);
    lo_words[lane] = static_cast<uint32_t>(block);
    hi_words[lane] = static_cast<uint32_t>(block >> 32);
  }
  __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo_words));
  __m256i y = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi_words));
  __m256i z = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(stream)));
  __m256i w = _mm256_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(stream >> 32)));
  uint32_t key0 = static_cast<uint32_t>(seed);
  uint32_t key1 = static_cast<uint32_t>(seed >> 32);
  const __m256i mul0 = _mm256_set1_epi32(static_cast<int32_t>(0xD2511F53u));
  const __m256i mul1 = _mm256_set1_epi32(static_cast<int32_t>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    internal::MulHiLo8(x, mul0, &hi0, &lo0);
    internal::MulHiLo8(z, mul1, &hi1, &lo1);
    x = _mm256_xor_si256(_mm256_xor_si256(hi1, y),
                         _mm256_set1_epi32(static_cast<int32_t>(key0)));
    y = lo1;
    z = _mm256_xor_si256(_mm256_xor_si256(hi0, w),
                         _mm256_set1_epi32(static_cast<int32_t>(key1)));
    w = lo0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  // 4 x 8 transpose: within each 128-bit half, unpacks gather block j's
  // (x, y, z, w); the cross-half permutes then put blocks in order.
  const __m256i xy_lo = _mm256_unpacklo_epi32(x, y);  // x0 y0 x1 y1 | x4 y4 x5 y5
  const __m256i xy_hi = _mm256_unpackhi_epi32(x, y);  // x2 y2 x3 y3 | x6 y6 x7 y7
  const __m256i zw_lo = _mm256_unpacklo_epi32(z, w);
  const __m256i zw_hi = _mm256_unpackhi_epi32(z, w);
  const __m256i b04 = _mm256_unpacklo_epi64(xy_lo, zw_lo);  // block 0 | block 4
  const __m256i b15 = _mm256_unpackhi_epi64(xy_lo, zw_lo);  // block 1 | block 5
  const __m256i b26 = _mm256_unpacklo_epi64(xy_hi, zw_hi);  // block 2 | block 6
  const __m256i b37 = _mm256_unpackhi_epi64(xy_hi, zw_hi);  // block 3 | block 7
  out[0] = _mm256_permute2x128_si256(b04, b15, 0x20);
  out[1] = _mm256_permute2x128_si256(b26, b37, 0x20);
  out[2] = _mm256_permute2x128_si256(b04, b15, 0x31);
  out[3] = _mm256_permute2x128_si256(b26, b37, 0x31);
}

// philox::ToUniform of 8 words at once: exact (24 bits fit a float).
inline __m256 ToUniform8(__m256i words) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(words, 8)),
                       _mm256_set1_ps(1.0f / 16777216.0f));
}

#endif  // TFM_SIMD_AVX2

// The same 32 words into memory; the portable fallback is philox::Block.
// For tests and callers that are not vectorised themselves.
inline void PhiloxWords32(uint64_t seed, uint64_t stream, uint64_t first_block,
                          uint32_t out[kPhiloxWords]) {
#ifdef TFM_SIMD_AVX2
  __m256i words[4];
  PhiloxWords32(seed, stream, first_block, words);
  for (int k = 0; k < 4; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 8 * k), words[k]);
#else
  for (int b = 0; b < 8; ++b) {
    const philox::Uint4 block = philox::Block(seed, stream, first_block + b);
    out[4 * b] = block.x;
    out[4 * b + 1] = block.y;
    out[4 * b + 2] = block.z;
    out[4 * b + 3] = block.w;
  }
#endif
}

}  // namespace simd
}  // namespace tfm

#endif  // TFM_OPS_CPU_MATH_PHILOX_SIMD_H_
