// CPU f32 kernel of adam: one fused elementwise pass (AVX2, the ragged end
// masked), threaded; the bias corrections are folded into two constants.
#include <cmath>

#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/simd_math.h"

namespace tfm {
namespace {

absl::Status AdamCpu(KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(double lr, attrs.Get<double>("lr"));
  TFM_ASSIGN_OR_RETURN(double beta1, attrs.Get<double>("beta1"));
  TFM_ASSIGN_OR_RETURN(double beta2, attrs.Get<double>("beta2"));
  TFM_ASSIGN_OR_RETURN(double eps, attrs.Get<double>("eps"));
  TFM_ASSIGN_OR_RETURN(int64_t step, attrs.Get<int64_t>("step"));
  // Bias corrections in double, as torch computes them in Python floats.
  const double t = static_cast<double>(step);
  const float step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, t)));
  const float correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t)));
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
  const float one_minus_b1 = static_cast<float>(1.0 - beta1);
  const float one_minus_b2 = static_cast<float>(1.0 - beta2);
  const float epsilon = static_cast<float>(eps);
  float* param = context.in_place_input(0).data<float>();
  const float* grad = context.input(1).data<float>();
  float* m = context.in_place_input(2).data<float>();
  float* v = context.in_place_input(3).data<float>();
  // 64K elements (1.75 MiB of the four arrays) per task.
  context.thread_pool()->ParallelFor(
      context.input(0).num_elements(), 1 << 16, [&](int64_t begin, int64_t end) {
        int64_t i = begin;
#ifdef TFM_SIMD_AVX2
        const __m256 vb1 = _mm256_set1_ps(b1), vb2 = _mm256_set1_ps(b2);
        const __m256 v1b1 = _mm256_set1_ps(one_minus_b1), v1b2 = _mm256_set1_ps(one_minus_b2);
        const __m256 vc2 = _mm256_set1_ps(correction2_sqrt);
        const __m256 veps = _mm256_set1_ps(epsilon), vstep = _mm256_set1_ps(step_size);
        // Up to 8 elements at i; the tail goes through the same arithmetic
        // with masked loads and stores, so every element rounds alike
        // whatever its position.
        // (Masked stores are slow on AMD, so whole vectors use plain ones.)
        auto update8 = [&](int64_t i, bool masked, __m256i lanes) {
          auto load = [&](const float* p) {
            return masked ? _mm256_maskload_ps(p, lanes) : _mm256_loadu_ps(p);
          };
          auto store = [&](float* p, __m256 value) {
            if (masked) {
              _mm256_maskstore_ps(p, lanes, value);
            } else {
              _mm256_storeu_ps(p, value);
            }
          };
          const __m256 g = load(grad + i);
          const __m256 mi = _mm256_fmadd_ps(vb1, load(m + i), _mm256_mul_ps(v1b1, g));
          const __m256 vi =
              _mm256_fmadd_ps(vb2, load(v + i), _mm256_mul_ps(_mm256_mul_ps(v1b2, g), g));
          // torch's order: sqrt(v) / sqrt(1 - beta2^t) + eps, then m / that.
          const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), vc2), veps);
          const __m256 update = _mm256_mul_ps(vstep, _mm256_div_ps(mi, denom));
          store(m + i, mi);
          store(v + i, vi);
          store(param + i, _mm256_sub_ps(load(param + i), update));
        };
        const __m256i all = _mm256_set1_epi32(-1);
        for (; i + 8 <= end; i += 8) update8(i, false, all);
        if (i < end) {
          const __m256i lane_ids = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
          update8(i, true, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(end - i)), lane_ids));
          i = end;
        }
#endif
        for (; i < end; ++i) {
          const float g = grad[i];
          m[i] = b1 * m[i] + one_minus_b1 * g;
          v[i] = b2 * v[i] + one_minus_b2 * g * g;
          param[i] -= step_size * (m[i] / (std::sqrt(v[i]) / correction2_sqrt + epsilon));
        }
      });
  // In place: the outputs are the updated inputs.
  context.SetOutput(0, context.input(0));
  context.SetOutput(1, context.input(2));
  context.SetOutput(2, context.input(3));
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("adam", DeviceType::kCPU, DType::kF32, AdamCpu);

}  // namespace
}  // namespace tfm
