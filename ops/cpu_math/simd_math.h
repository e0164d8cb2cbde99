// Vectorised row primitives shared by the fused softmax kernels (attention,
// cross-entropy, softmax): max, exp(x - shift) with its sum, scaling, dot.
// Written once over ops/cpu_math/vec.h, so they run 8 lanes wide in the
// AVX2 build and 16 in the AVX-512 one; row tails go through the same
// arithmetic with masked loads and stores.
//
// exp uses Cody-Waite range reduction and a degree-6 minimax polynomial
// (about 2 ulp over the float range), so results agree with std::exp to
// ~1e-7 relative. Inputs below -87.3 (including -inf, the value masked
// scores carry) give exactly 0, which the kernels rely on.
#ifndef TFM_OPS_CPU_MATH_SIMD_MATH_H_
#define TFM_OPS_CPU_MATH_SIMD_MATH_H_

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace simd {

inline VecF Exp(VecF x) {
  const VecF min = Set(-87.3f);
  const Mask valid = Ge(x, min);  // False for NaN too.
  x = Min(Max(x, min), Set(88.37f));
  // x = n ln2 + r with |r| <= ln2 / 2; ln2 split so n * ln2_hi is exact.
  const VecF n = RoundNearest(x * Set(1.44269504088896341f));
  VecF r = NegMulAdd(n, Set(0.693359375f), x);
  r = NegMulAdd(n, Set(-2.12194440e-4f), r);
  VecF p = Set(1.9875691500e-4f);
  p = MulAdd(p, r, Set(1.3981999507e-3f));
  p = MulAdd(p, r, Set(8.3334519073e-3f));
  p = MulAdd(p, r, Set(4.1665795894e-2f));
  p = MulAdd(p, r, Set(1.6666665459e-1f));
  p = MulAdd(p, r, Set(5.0000001201e-1f));
  p = MulAdd(p, r * r, r + Set(1.0f));
  const VecI exponent = ShiftLeft<23>(RoundToInt(n) + SetI(127));
  return IfThenElseZero(valid, p * BitCastToF(exponent));
}

// exp for one float with the same polynomial, so it matches the vector body.
inline float Exp(float x) { return First(Exp(Set(x))); }

// max(x[0..n)), -inf for n == 0.
inline float Max(const float* x, int64_t n) {
  float result = -std::numeric_limits<float>::infinity();
  int64_t i = 0;
  if (n >= kLanes) {
    VecF acc = Load(x);
    for (i = kLanes; i + kLanes <= n; i += kLanes) acc = Max(acc, Load(x + i));
    result = ReduceMax(acc);
  }
  for (; i < n; ++i) result = x[i] > result ? x[i] : result;
  return result;
}

// max(x[0..n)) and, in the same pass over x, sum(x[0..n)) into *sum (-inf
// and 0 for n == 0). Four accumulators per lane keep the adds off the
// critical path; lanes hold ~n/32 terms each, so float sums stay within a
// few ulp per term of a double sum for vocabulary-sized rows.
inline float MaxAndSum(const float* x, int64_t n, float* sum) {
  VecF m0 = Set(-std::numeric_limits<float>::infinity()), m1 = m0;
  VecF s0 = Zero(), s1 = Zero(), s2 = Zero(), s3 = Zero();
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    const VecF a = Load(x + i), b = Load(x + i + kLanes);
    const VecF c = Load(x + i + 2 * kLanes), d = Load(x + i + 3 * kLanes);
    m0 = Max(m0, Max(a, b));
    m1 = Max(m1, Max(c, d));
    s0 = s0 + a;
    s1 = s1 + b;
    s2 = s2 + c;
    s3 = s3 + d;
  }
  for (; i + kLanes <= n; i += kLanes) {
    const VecF a = Load(x + i);
    m0 = Max(m0, a);
    s0 = s0 + a;
  }
  float result = ReduceMax(Max(m0, m1));
  float total = ReduceSum((s0 + s1) + (s2 + s3));
  for (; i < n; ++i) {
    result = x[i] > result ? x[i] : result;
    total += x[i];
  }
  *sum = total;
  return result;
}

// max(x[0..n)) like Max, except that a NaN anywhere gives NaN (Max may
// skip it): kernels that promise PyTorch's NaN propagation test for it.
inline float MaxOrNaN(const float* x, int64_t n) {
  float result = -std::numeric_limits<float>::infinity();
  bool nan = false;
  int64_t i = 0;
  if (n >= kLanes) {
    VecF acc = Load(x);
    Mask unordered = IsNaN(acc);
    for (i = kLanes; i + kLanes <= n; i += kLanes) {
      const VecF v = Load(x + i);
      acc = Max(acc, v);
      unordered = unordered | IsNaN(v);
    }
    result = ReduceMax(acc);
    nan = AnyTrue(unordered);
  }
  for (; i < n; ++i) {
    nan |= x[i] != x[i];
    result = x[i] > result ? x[i] : result;
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : result;
}

// y[i] = f(x[i] - shift) for a vector function f; x and y may be the same
// array or disjoint. Returns the sum of the y[i]. Serves every exp-and-sum
// of a softmax row, whatever the base of the exponential.
template <typename F>
inline float ShiftedMapSum(const float* x, float* y, int64_t n, float shift, F f) {
  const VecF vshift = Set(shift);
  VecF acc0 = Zero(), acc1 = Zero();
  int64_t i = 0;
  // Two accumulators: the adds' latency would otherwise bound the loop.
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const VecF e0 = f(Load(x + i) - vshift);
    const VecF e1 = f(Load(x + i + kLanes) - vshift);
    Store(e0, y + i);
    Store(e1, y + i + kLanes);
    acc0 = acc0 + e0;
    acc1 = acc1 + e1;
  }
  for (; i + kLanes <= n; i += kLanes) {
    const VecF e = f(Load(x + i) - vshift);
    Store(e, y + i);
    acc0 = acc0 + e;
  }
  if (i < n) {
    const VecF e = IfThenElseZero(FirstN(n - i), f(LoadFirst(x + i, n - i) - vshift));
    StoreFirst(e, y + i, n - i);
    acc1 = acc1 + e;
  }
  return ReduceSum(acc0 + acc1);
}

// y[i] = exp(x[i] - shift) (x and y may be the same array or disjoint);
// returns the sum of the y[i].
inline float ExpShiftedSumTo(const float* x, float* y, int64_t n, float shift) {
  return ShiftedMapSum(x, y, n, shift, [](VecF v) { return Exp(v); });
}

// x[i] = exp(x[i] - shift) in place; returns the sum of the new values.
inline float ExpShiftedSum(float* x, int64_t n, float shift) {
  return ExpShiftedSumTo(x, x, n, shift);
}

// sum(exp(x[i] - shift)) without writing x.
// `prefetch` (may be null): n floats brought into the cache meanwhile, a
// line per vector (e.g. the next row, whose first pass would otherwise wait
// on memory); the exponentials leave the loads time to arrive.
inline float SumExpShifted(const float* x, int64_t n, float shift,
                           const float* prefetch = nullptr) {
  const VecF vshift = Set(shift);
  VecF acc = Zero();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    if (prefetch != nullptr) _mm_prefetch(reinterpret_cast<const char*>(prefetch + i), _MM_HINT_T0);
    acc = acc + Exp(Load(x + i) - vshift);
  }
  if (i < n) acc = acc + IfThenElseZero(FirstN(n - i), Exp(LoadFirst(x + i, n - i) - vshift));
  return ReduceSum(acc);
}

// y[i] = x[i] rounded to f16 (tfm::Half's bits), to nearest even, as
// Half(float) rounds; and back, exactly: F16C's conversions, a vector at a
// time (cast, and the f16 key/value caches of CPU decoding).
inline void RoundToHalf(const float* x, uint16_t* y, int64_t n) {
  ForEachVector(0, n, [&](int64_t i, auto lanes) {
    if constexpr (std::is_same_v<decltype(lanes), AllLanes>) {
      StoreHalf(Load(x + i), y + i);
    } else {
      StoreFirstHalf(LoadFirst(x + i, lanes.n), y + i, lanes.n);
    }
  });
}
inline void WidenHalf(const uint16_t* x, float* y, int64_t n) {
  ForEachVector(0, n, [&](int64_t i, auto lanes) {
    if constexpr (std::is_same_v<decltype(lanes), AllLanes>) {
      Store(LoadHalf(x + i), y + i);
    } else {
      StoreFirst(LoadFirstHalf(x + i, lanes.n), y + i, lanes.n);
    }
  });
}

// x[i] *= factor.
inline void Scale(float* x, int64_t n, float factor) {
  const VecF f = Set(factor);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(Load(x + i) * f, x + i);
  if (i < n) StoreFirst(LoadFirst(x + i, n - i) * f, x + i, n - i);
}

// z[i] = x[i] + y[i]. Explicitly vectorised: GCC's -O2 cost model leaves
// loops with an unknown trip count scalar.
inline void Add(const float* x, const float* y, float* z, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(Load(x + i) + Load(y + i), z + i);
  if (i < n) StoreFirst(LoadFirst(x + i, n - i) + LoadFirst(y + i, n - i), z + i, n - i);
}

// sum(a[i] * b[i]).
inline float Dot(const float* a, const float* b, int64_t n) {
  VecF acc = Zero();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) acc = MulAdd(Load(a + i), Load(b + i), acc);
  if (i < n) acc = MulAdd(LoadFirst(a + i, n - i), LoadFirst(b + i, n - i), acc);
  return ReduceSum(acc);
}

}  // namespace simd
TFM_ISA_END

#endif  // TFM_OPS_CPU_MATH_SIMD_MATH_H_
