// Inner loops shared by row-wise CPU kernels (softmax, layer_norm, ...),
// written so that GCC vectorises them at -O3 for the instruction set of the
// kernel build (ops/cpu_math/isa.h) and without -ffast-math (which would
// break the -inf and NaN handling kernels rely on).
#ifndef TFM_OPS_CPU_MATH_ROW_MATH_H_
#define TFM_OPS_CPU_MATH_ROW_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN
namespace cpu_math {

// One vector register of floats.
using simd::kLanes;

// sum_i f(i) for i < n. kLanes interleaved partial sums: a single running sum
// is a serial dependency the compiler may not reorder without -ffast-math.
template <typename F>
inline float LaneSum(int64_t n, F f) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) partial[lane] += f(i + lane);
  }
  float sum = 0.0f;
  for (; i < n; ++i) sum += f(i);
  for (int lane = 0; lane < kLanes; ++lane) sum += partial[lane];
  return sum;
}

// max_i values[i] for i < n (-inf when n == 0). NaNs are not propagated.
inline float LaneMax(const float* values, int64_t n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  float partial[kLanes];
  for (int lane = 0; lane < kLanes; ++lane) partial[lane] = kNegInf;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) {
      partial[lane] = values[i + lane] > partial[lane] ? values[i + lane] : partial[lane];
    }
  }
  float result = kNegInf;
  for (; i < n; ++i) result = values[i] > result ? values[i] : result;
  for (int lane = 0; lane < kLanes; ++lane) result = partial[lane] > result ? partial[lane] : result;
  return result;
}

// exp(v) for v <= 0 (a softmax's x - max), within ~2.5 ulp of expf, and
// exactly 0 below ln(FLT_MIN) (so -inf gives 0). Plain inlined arithmetic
// instead of a libm call: v = n ln2 + r with |r| <= ln2/2 (n rounded, ln2
// split Cody-Waite style), exp(r) by Cephes' expf polynomial, and 2^n built
// in the exponent bits. GCC vectorises loops over it only with
// -fno-trapping-math (its selects are otherwise not if-converted); the
// default build does not pass that flag yet.
inline float ExpNonPositive(float v) {
  constexpr float kMin = -87.336544f;  // ln(FLT_MIN): 2^n stays normal above.
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;
  constexpr float kLn2Lo = -2.12194440e-4f;
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer with
  // plain arithmetic (exact here: |clamped * log2e| <= 126).
  constexpr float kRound = 12582912.0f;
  constexpr float kMax = 88.0f;  // Keeps 2^n a finite float for stray v > 0.
  // NaN fails `v >= kMin` and is clamped too: converting it to an integer
  // below would be undefined behaviour. It is given back as NaN at the end.
  const float clamped = v >= kMin ? (v > kMax ? kMax : v) : kMin;
  const float n = (clamped * kLog2e + kRound) - kRound;
  float r = clamped - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  if (v != v) return v;
  return v < kMin ? 0.0f : p * scale;
}

}  // namespace cpu_math
TFM_ISA_END

#endif  // TFM_OPS_CPU_MATH_ROW_MATH_H_
