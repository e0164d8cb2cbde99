// Philox4x32-10 for kLanes consecutive blocks at once (8 with AVX2, 16 with
// AVX-512), bit-identical to philox::Block (core/philox.h): dropout masks
// are the same on every instruction set and on CUDA. Regenerating a dropout
// mask is dominated by the generator, and the scalar one spends most of its
// time on 32x32->64-bit multiplies that the vector units do kLanes / 2 at
// a time.
//
// Layout: the blocks are kept "structure of arrays" (one register per
// counter word, one lane per block) while the rounds run, then transposed so
// that the 4 * kLanes words come out in element order: element i of the run
// is block first_block + i / 4, lane i % 4, the layout of core/rng.h.
#ifndef TFM_OPS_CPU_MATH_PHILOX_SIMD_H_
#define TFM_OPS_CPU_MATH_PHILOX_SIMD_H_

#include <algorithm>
#include <cstdint>

#include "core/philox.h"
#include "core/rng.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace simd {

// Blocks and words produced per call.
inline constexpr int kPhiloxBlocks = kLanes;
inline constexpr int kPhiloxWords = 4 * kLanes;

namespace internal {

// Block j's words (x[j], y[j], z[j], w[j]) to element order: out[k] holds
// elements k * kLanes .. (k + 1) * kLanes - 1, i.e. blocks 4k/... in turn.
inline void InterleaveBlocks(VecI x, VecI y, VecI z, VecI w, VecI out[4]) {
#if defined(TFM_KERNEL_ISA_AVX512)
// GCC 12's false -Wmaybe-uninitialized in AVX-512 intrinsics: see vec.h.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  // Within each 128-bit lane L the unpacks gather blocks 4L .. 4L+3; the
  // 4 x 4 transpose of 128-bit lanes then puts blocks in order.
  const __m512i xy_lo = _mm512_unpacklo_epi32(x.raw, y.raw);
  const __m512i xy_hi = _mm512_unpackhi_epi32(x.raw, y.raw);
  const __m512i zw_lo = _mm512_unpacklo_epi32(z.raw, w.raw);
  const __m512i zw_hi = _mm512_unpackhi_epi32(z.raw, w.raw);
  const __m512i b0 = _mm512_unpacklo_epi64(xy_lo, zw_lo);  // Blocks 0, 4, 8, 12.
  const __m512i b1 = _mm512_unpackhi_epi64(xy_lo, zw_lo);  // Blocks 1, 5, 9, 13.
  const __m512i b2 = _mm512_unpacklo_epi64(xy_hi, zw_hi);  // Blocks 2, 6, 10, 14.
  const __m512i b3 = _mm512_unpackhi_epi64(xy_hi, zw_hi);  // Blocks 3, 7, 11, 15.
  const __m512i t0 = _mm512_shuffle_i32x4(b0, b1, _MM_SHUFFLE(1, 0, 1, 0));  // 0 4 1 5
  const __m512i t1 = _mm512_shuffle_i32x4(b0, b1, _MM_SHUFFLE(3, 2, 3, 2));  // 8 12 9 13
  const __m512i t2 = _mm512_shuffle_i32x4(b2, b3, _MM_SHUFFLE(1, 0, 1, 0));  // 2 6 3 7
  const __m512i t3 = _mm512_shuffle_i32x4(b2, b3, _MM_SHUFFLE(3, 2, 3, 2));  // 10 14 11 15
  out[0].raw = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(2, 0, 2, 0));  // 0 1 2 3
  out[1].raw = _mm512_shuffle_i32x4(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));  // 4 5 6 7
  out[2].raw = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));  // 8 9 10 11
  out[3].raw = _mm512_shuffle_i32x4(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));  // 12 13 14 15
#pragma GCC diagnostic pop
#else
  // Within each 128-bit half, unpacks gather block j's (x, y, z, w); the
  // cross-half permutes then put blocks in order.
  const __m256i xy_lo = _mm256_unpacklo_epi32(x.raw, y.raw);  // x0 y0 x1 y1 | x4 y4 x5 y5
  const __m256i xy_hi = _mm256_unpackhi_epi32(x.raw, y.raw);  // x2 y2 x3 y3 | x6 y6 x7 y7
  const __m256i zw_lo = _mm256_unpacklo_epi32(z.raw, w.raw);
  const __m256i zw_hi = _mm256_unpackhi_epi32(z.raw, w.raw);
  const __m256i b04 = _mm256_unpacklo_epi64(xy_lo, zw_lo);  // block 0 | block 4
  const __m256i b15 = _mm256_unpackhi_epi64(xy_lo, zw_lo);  // block 1 | block 5
  const __m256i b26 = _mm256_unpacklo_epi64(xy_hi, zw_hi);  // block 2 | block 6
  const __m256i b37 = _mm256_unpackhi_epi64(xy_hi, zw_hi);  // block 3 | block 7
  out[0].raw = _mm256_permute2x128_si256(b04, b15, 0x20);
  out[1].raw = _mm256_permute2x128_si256(b26, b37, 0x20);
  out[2].raw = _mm256_permute2x128_si256(b04, b15, 0x31);
  out[3].raw = _mm256_permute2x128_si256(b26, b37, 0x31);
#endif
}

}  // namespace internal

// The words of blocks first_block .. first_block + kPhiloxBlocks - 1 of
// (seed, stream), in element order: out[k] holds elements k * kLanes ...
inline void PhiloxWords(uint64_t seed, uint64_t stream, uint64_t first_block, VecI out[4]) {
  // Counter low 64 bits = first_block + lane, with the carry into the high
  // word done per lane (the run may straddle a 2^32 boundary).
  uint32_t lo_words[kLanes], hi_words[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) {
    const uint64_t block = first_block + static_cast<uint64_t>(lane);
    lo_words[lane] = static_cast<uint32_t>(block);
    hi_words[lane] = static_cast<uint32_t>(block >> 32);
  }
  VecI x = LoadI(lo_words);
  VecI y = LoadI(hi_words);
  VecI z = SetI(static_cast<uint32_t>(stream));
  VecI w = SetI(static_cast<uint32_t>(stream >> 32));
  uint32_t key0 = static_cast<uint32_t>(seed);
  uint32_t key1 = static_cast<uint32_t>(seed >> 32);
  const VecI mul0 = SetI(0xD2511F53u);
  const VecI mul1 = SetI(0xCD9E8D57u);
  for (int round = 0; round < 10; ++round) {
    VecI hi0, lo0, hi1, lo1;
    MulHiLo(x, mul0, &hi0, &lo0);
    MulHiLo(z, mul1, &hi1, &lo1);
    x = hi1 ^ y ^ SetI(key0);
    y = lo1;
    z = hi0 ^ w ^ SetI(key1);
    w = lo0;
    key0 += 0x9E3779B9u;
    key1 += 0xBB67AE85u;
  }
  internal::InterleaveBlocks(x, y, z, w, out);
}

// philox::ToUniform of every lane: exact (24 bits fit a float).
inline VecF ToUniform(VecI words) {
  return ConvertToF(ShiftRight<8>(words)) * Set(1.0f / 16777216.0f);
}

// The same words into memory, for tests and callers that are not
// vectorised themselves.
inline void PhiloxWords(uint64_t seed, uint64_t stream, uint64_t first_block,
                        uint32_t out[kPhiloxWords]) {
  VecI words[4];
  PhiloxWords(seed, stream, first_block, words);
  for (int k = 0; k < 4; ++k) StoreI(words[k], out + kLanes * k);
}

// The keep decisions (uniform >= threshold) of elements first .. first +
// n - 1 of the stream of `state` (element i from block offset + i / 4, lane
// i % 4, as the dropout op draws it): vector(j, mask) for each whole run of
// kLanes elements from position j (counted from `first`) on, from the first
// block boundary, and scalar(j, keep) for the elements before that boundary
// and the fewer than kLanes after the last whole run. The words come kLanes
// blocks at a time from the vector generator, the ragged end's too:
// attention's rows of 32 to 64 keys are short, and a block at a time cost
// them as much as their products.
template <typename VectorBody, typename ScalarBody>
void ForEachKeep(const PhiloxState& state, float threshold, int64_t first, int64_t n,
                 VectorBody vector, ScalarBody scalar) {
  int64_t j = 0;
  // Up to the first block boundary: part of one block.
  if (const int64_t lead = std::min(n, (4 - first % 4) % 4); lead > 0) {
    const philox::Uint4 bits = philox::Block(state.seed, state.stream, state.offset + first / 4);
    for (; j < lead; ++j) {
      scalar(j, philox::ToUniform(philox::Lane(bits, static_cast<int>((first + j) % 4))) >=
                    threshold);
    }
  }
  const VecF vthreshold = Set(threshold);
  for (; j < n; j += kPhiloxWords) {
    VecI words[4];
    PhiloxWords(state.seed, state.stream, state.offset + (first + j) / 4, words);
    for (int k = 0; k < 4; ++k) {
      const int64_t at = j + kLanes * k;
      if (at + kLanes <= n) {
        vector(at, Ge(ToUniform(words[k]), vthreshold));
        continue;
      }
      uint32_t lanes[kLanes];
      StoreI(words[k], lanes);
      for (int64_t l = 0; at + l < n; ++l) scalar(at + l, philox::ToUniform(lanes[l]) >= threshold);
      break;
    }
  }
}

}  // namespace simd
TFM_ISA_END

#endif  // TFM_OPS_CPU_MATH_PHILOX_SIMD_H_
