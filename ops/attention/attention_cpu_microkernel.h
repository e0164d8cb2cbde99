// Vector building blocks of the packed attention kernels
// (attention_cpu_packed.cc): the register-blocked product for the small
// tiles of attention (shared with packed_linear, in
// ops/cpu_math/register_product.h) and a base-2 exponential, written over
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
#include "ops/cpu_math/register_product.h"
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

// The register-blocked products (ops/cpu_math/register_product.h).
using register_product::MicroKernel;
using register_product::RowBlock;
using register_product::TileProduct;

}  // namespace attention_cpu
TFM_ISA_END

#endif  // TFM_OPS_ATTENTION_ATTENTION_CPU_MICROKERNEL_H_
