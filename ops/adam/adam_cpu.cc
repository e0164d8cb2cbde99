// CPU f32 kernel of adam: one fused elementwise vector pass (the ragged end
// masked), threaded; the bias corrections are folded into two constants.
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "ops/adam/adam_kernel_args.h"
#include "ops/cpu_math/isa.h"
#include "ops/cpu_math/isa_dispatch.h"
#include "ops/cpu_math/vec.h"

TFM_ISA_BEGIN

absl::Status AdamCpu(KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const AdamStep c, ReadAdamStep(context));
  float* param = context.in_place_input(0).data<float>();
  const float* grad = context.input(1).data<float>();
  float* m = context.in_place_input(2).data<float>();
  float* v = context.in_place_input(3).data<float>();
  // 64K elements (1.75 MiB of the four arrays) per task.
  context.thread_pool()->ParallelFor(
      context.input(0).num_elements(), 1 << 16, [&](int64_t begin, int64_t end) {
        using simd::Load;
        using simd::Store;
        using simd::VecF;
        const VecF vb1 = simd::Set(c.beta1), vb2 = simd::Set(c.beta2);
        const VecF v1b1 = simd::Set(c.one_minus_beta1), v1b2 = simd::Set(c.one_minus_beta2);
        const VecF vc2 = simd::Set(c.correction2_sqrt);
        const VecF veps = simd::Set(c.eps), vstep = simd::Set(c.step_size);
        // The ragged end goes through the same arithmetic with masked loads
        // and stores, so every element rounds alike whatever its position.
        simd::ForEachVector(begin, end, [&](int64_t i, auto lanes) {
          const VecF g = Load(grad + i, lanes);
          const VecF mi = simd::MulAdd(vb1, Load(m + i, lanes), v1b1 * g);
          const VecF vi = simd::MulAdd(vb2, Load(v + i, lanes), v1b2 * g * g);
          // torch's order: sqrt(v) / sqrt(1 - beta2^t) + eps, then m / that.
          const VecF denom = simd::Sqrt(vi) / vc2 + veps;
          Store(mi, m + i, lanes);
          Store(vi, v + i, lanes);
          Store(Load(param + i, lanes) - vstep * (mi / denom), param + i, lanes);
        });
      });
  // In place: the outputs are the updated inputs.
  context.SetOutput(0, context.input(0));
  context.SetOutput(1, context.input(2));
  context.SetOutput(2, context.input(3));
  return absl::OkStatus();
}

TFM_ISA_END

TFM_REGISTER_ISA_KERNEL("adam", DType::kF32, AdamCpu);
