// CPU f32 kernel of adam: one fused elementwise pass, threaded.
#include <cmath>

#include "core/op_registry.h"
#include "core/status_macros.h"

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
  float* param = context.input(0).data<float>();
  const float* grad = context.input(1).data<float>();
  float* m = context.input(2).data<float>();
  float* v = context.input(3).data<float>();
  context.thread_pool()->ParallelFor(
      context.input(0).num_elements(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
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
