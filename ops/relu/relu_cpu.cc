// CPU kernels of relu: threaded AVX2 loops (each one compare and one mask),
// with scalar tails that compute exactly the same values.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/cpu_math/simd_math.h"

namespace tfm {
namespace {

// 64K floats (256 KiB) per task: big enough that the pool's wake-up is
// noise, small enough for every thread to get work on the FFN's tensors.
constexpr int64_t kGrain = 1 << 16;

absl::Status ReluCpu(KernelContext& context) {
  const Tensor& x = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * out, context.AllocateOutput(0, x.shape(), DType::kF32));
  const float* in = x.data<float>();
  float* y = out->data<float>();
  context.thread_pool()->ParallelFor(x.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
    int64_t i = begin;
#ifdef TFM_SIMD_AVX2
    // "Not x <= 0" holds for x > 0 and for NaN, which must propagate as in
    // PyTorch (max_ps would drop it); -0 and negatives become +0.
    const __m256 zero = _mm256_setzero_ps();
    for (; i + 8 <= end; i += 8) {
      const __m256 v = _mm256_loadu_ps(in + i);
      _mm256_storeu_ps(y + i, _mm256_and_ps(v, _mm256_cmp_ps(v, zero, _CMP_NLE_UQ)));
    }
#endif
    for (; i < end; ++i) y[i] = in[i] > 0.0f || in[i] != in[i] ? in[i] : 0.0f;
  });
  return absl::OkStatus();
}

absl::Status ReluBackwardCpu(KernelContext& context) {
  const Tensor& dout = context.input(0);
  TFM_ASSIGN_OR_RETURN(Tensor * dx, context.AllocateOutput(0, dout.shape(), DType::kF32));
  const float* dy = dout.data<float>();
  const float* y = context.input(1).data<float>();
  float* out = dx->data<float>();
  context.thread_pool()->ParallelFor(
      dout.num_elements(), kGrain, [&](int64_t begin, int64_t end) {
        int64_t i = begin;
#ifdef TFM_SIMD_AVX2
        // Ordered compare: out = 0 or NaN passes no gradient (as the select below).
        const __m256 zero = _mm256_setzero_ps();
        for (; i + 8 <= end; i += 8) {
          const __m256 keep = _mm256_cmp_ps(_mm256_loadu_ps(y + i), zero, _CMP_GT_OQ);
          _mm256_storeu_ps(out + i, _mm256_and_ps(_mm256_loadu_ps(dy + i), keep));
        }
#endif
        for (; i < end; ++i) out[i] = y[i] > 0.0f ? dy[i] : 0.0f;
      });
  return absl::OkStatus();
}

TFM_REGISTER_KERNEL("relu", DeviceType::kCPU, DType::kF32, ReluCpu);
TFM_REGISTER_KERNEL("relu_backward", DeviceType::kCPU, DType::kF32, ReluBackwardCpu);

}  // namespace
}  // namespace tfm
