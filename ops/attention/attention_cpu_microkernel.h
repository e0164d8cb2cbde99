// Vector building blocks of the packed attention kernels
// (attention_cpu_packed.cc): a register-blocked product for the small
// tiles of attention and a base-2 exponential, written over
// ops/cpu_math/vec.h (8 lanes with AVX2, 16 with AVX-512).
//
// Why not cblas_sgemm per tile: a 64 x 64 x 64 product is ~0.5 us of work,
// and BLAS's per-call cost (argument checks, dispatch, packing both
// operands into its own buffers) is a large fraction of that. Here the
// operands are already laid out so that the micro-kernel reads them in
// place: no packing per call, nothing allocated.
#ifndef TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_
#define TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_

#include <algorithm>
#include <cstdint>

#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/simd_math.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace attention_cpu {

using simd::kLanes;
using simd::VecF;

// 2^x for x <= 127, exactly 0 for x <= -127 (masked scores are -inf, and
// every kernel relies on them giving 0). Scores are kept in base-2 units
// (log2(e) is folded into the scale), which saves the range reduction's
// multiply and one polynomial term over exp: x = n + r with |r| <= 1/2, and
// 2^r by a degree-5 polynomial fitted for relative error (1.8e-7 max in
// float arithmetic, i.e. 1-2 ulp).
inline VecF Exp2(VecF x) {
  x = simd::Min(simd::Max(x, simd::Set(-127.0f)), simd::Set(127.0f));
  const VecF n = simd::RoundNearest(x);
  const VecF r = x - n;
  VecF p = simd::Set(1.326995553e-3f);
  p = simd::MulAdd(p, r, simd::Set(9.671511129e-3f));
  p = simd::MulAdd(p, r, simd::Set(5.550715700e-2f));
  p = simd::MulAdd(p, r, simd::Set(2.402224243e-1f));
  p = simd::MulAdd(p, r, simd::Set(6.931470037e-1f));
  p = simd::MulAdd(p, r, simd::Set(1.0f));
  // 2^n built in the exponent field; n = -127 gives the bit pattern of +0.
  const simd::VecI two_n = simd::ShiftLeft<23>(simd::RoundToInt(n) + simd::SetI(127));
  return p * simd::BitCastToF(two_n);
}

// The same function for one value.
inline float Exp2(float x) { return simd::First(Exp2(simd::Set(x))); }

// x[i] = 2^(x[i] - shift) in place; returns the sum of the new values.
inline float Exp2ShiftedSum(float* x, int64_t n, float shift) {
  return simd::ShiftedMapSum(x, x, n, shift, [](VecF v) { return Exp2(v); });
}

// x[i] = 2^(x[i] - shift) in place.
inline void Exp2Shifted(float* x, int64_t n, float shift) {
  const VecF vshift = simd::Set(shift);
  simd::ForEachVector(0, n, [&](int64_t i, auto lanes) {
    simd::Store(Exp2(simd::Load(x + i, lanes) - vshift), x + i, lanes);
  });
}

// The register block: C[R x kVecs * kLanes] (+)= sum over k < depth of
// A(r, k) B(k, :), where A(r, k) = a[r * a_row + k * a_step] (so A may be
// read transposed in place: a_row = 1 reads R consecutive floats per k) and
// row k of B starts at b + k * ldb. R * kVecs accumulators, R broadcasts
// and kVecs loads per k: with R = 6 and kVecs = 2, 12 independent FMA
// chains cover the FMA latency on both ports.
template <int R, int kVecs, bool kAccumulate>
inline void MicroKernel(int64_t depth, const float* a, int64_t a_row, int64_t a_step,
                        const float* b, int64_t ldb, float* c, int64_t ldc) {
  VecF acc[R][kVecs];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < kVecs; ++v) {
      acc[r][v] = kAccumulate ? simd::Load(c + r * ldc + v * kLanes) : simd::Zero();
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    VecF bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = simd::Load(b + v * kLanes);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const VecF av = simd::LoadBroadcast(a + r * a_row);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = simd::MulAdd(av, bv[v], acc[r][v]);
    }
    a += a_step;
    b += ldb;
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < kVecs; ++v) simd::Store(acc[r][v], c + r * ldc + v * kLanes);
  }
}

// R rows of C across all n columns (a multiple of 16, so of kLanes): two
// vectors per block, and on AVX-512 a last block of one vector where n is
// an odd multiple of 16.
template <int R, bool kAccumulate>
inline void RowBlock(int64_t n, int64_t depth, const float* a, int64_t a_row, int64_t a_step,
                     const float* b, int64_t ldb, float* c, int64_t ldc) {
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) {
    MicroKernel<R, 2, kAccumulate>(depth, a, a_row, a_step, b + j, ldb, c + j, ldc);
  }
  for (; j < n; j += kLanes) {
    MicroKernel<R, 1, kAccumulate>(depth, a, a_row, a_step, b + j, ldb, c + j, ldc);
  }
}

// C[m x n] (+)= A(m x depth) B(depth x n) for n a multiple of 16, A as in
// MicroKernel, B row-major with leading dimension ldb, C with ldc. Row
// blocks outside, column strips inside: a block's R rows of A stay in L1
// while it sweeps all of B (a tile's B is at most 64 KiB, in L2).
template <bool kAccumulate>
void TileProduct(int64_t m, int64_t n, int64_t depth, const float* a, int64_t a_row, int64_t a_step,
                 const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int kRows = 6;
  int64_t i = 0;
  for (; i + kRows <= m; i += kRows) {
    RowBlock<kRows, kAccumulate>(n, depth, a + i * a_row, a_row, a_step, b, ldb, c + i * ldc, ldc);
  }
  const int64_t rest = m - i;
  if (rest == 0) return;
  const float* a_rest = a + i * a_row;
  float* c_rest = c + i * ldc;
  switch (rest) {
    case 1:
      RowBlock<1, kAccumulate>(n, depth, a_rest, a_row, a_step, b, ldb, c_rest, ldc);
      break;
    case 2:
      RowBlock<2, kAccumulate>(n, depth, a_rest, a_row, a_step, b, ldb, c_rest, ldc);
      break;
    case 3:
      RowBlock<3, kAccumulate>(n, depth, a_rest, a_row, a_step, b, ldb, c_rest, ldc);
      break;
    case 4:
      RowBlock<4, kAccumulate>(n, depth, a_rest, a_row, a_step, b, ldb, c_rest, ldc);
      break;
    default:
      RowBlock<5, kAccumulate>(n, depth, a_rest, a_row, a_step, b, ldb, c_rest, ldc);
      break;
  }
}

}  // namespace attention_cpu
TFM_ISA_END

#endif  // TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_
