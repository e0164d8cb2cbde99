// A register-blocked matrix product over ops/cpu_math/vec.h: the inner
// block of the CPU kernels that multiply operands already laid out for it
// (attention's tiles, packed_linear's pre-packed weights), so that nothing
// is packed per call and nothing is allocated.
//
// Why not cblas_sgemm: for the small products these kernels run (a 64 x 64
// x 64 attention tile, a decoding step's 128 rows against a weight), BLAS's
// per-call cost (argument checks, dispatch, packing both operands into its
// own buffers) is a large fraction of the work.
#ifndef TFM_OPS_CPU_MATH_REGISTER_PRODUCT_H_
#define TFM_OPS_CPU_MATH_REGISTER_PRODUCT_H_

#include <cstdint>

#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/vec.h"
#include "ops/cpu_math/with_row_count.h"

TFM_ISA_BEGIN
namespace register_product {

using simd::kLanes;
using simd::VecF;

// MicroKernel's default `finish`: the sums as they are.
struct KeepSums {
  VecF operator()(VecF sum, int /*v*/) const { return sum; }
};

// The register block: C[R x kVecs * kLanes] (+)= sum over k < depth of
// A(r, k) B(k, :), where A(r, k) = a[r * a_row + k * a_step] (so A may be
// read transposed in place: a_row = 1 reads R consecutive floats per k) and
// row k of B starts at b + k * ldb. R * kVecs accumulators, R broadcasts
// and kVecs loads per k: with R = 6 and kVecs = 2, 12 independent FMA
// chains cover the FMA latency on both ports. `finish(sum, v)` gives what
// is stored of vector v of a row's sums (a bias and a ReLU applied in
// registers, where a second pass over C would read it back).
template <int R, int kVecs, bool kAccumulate, typename Finish = KeepSums>
inline void MicroKernel(int64_t depth, const float* a, int64_t a_row, int64_t a_step,
                        const float* b, int64_t ldb, float* c, int64_t ldc,
                        Finish finish = Finish()) {
  VecF acc[R][kVecs];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < kVecs; ++v) {
      acc[r][v] = kAccumulate ? simd::Load(c + r * ldc + v * kLanes) : simd::Zero();
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    VecF bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = simd::Load(b + v * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const VecF av = simd::LoadBroadcast(a + r * a_row);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = simd::MulAdd(av, bv[v], acc[r][v]);
    }
    a += a_step;
    b += ldb;
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    for (int v = 0; v < kVecs; ++v) simd::Store(finish(acc[r][v], v), c + r * ldc + v * kLanes);
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

using ::tfm::WithRowCount;  // ops/cpu_math/with_row_count.h

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
  if (i == m) return;
  WithRowCount<kRows - 1>(static_cast<int>(m - i), [&](auto rest) {
    RowBlock<decltype(rest)::value, kAccumulate>(n, depth, a + i * a_row, a_row, a_step, b, ldb,
                                                 c + i * ldc, ldc);
  });
}

}  // namespace register_product
TFM_ISA_END

#endif  // TFM_OPS_CPU_MATH_REGISTER_PRODUCT_H_
