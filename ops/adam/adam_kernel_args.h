// The constants of one Adam step, shared by the kernels of every device
// (the CUDA launchers take them too).
#ifndef TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_
#define TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_

#include <cmath>
#include <cstdint>

namespace tfm {

// param -= step_size * m / (sqrt(v) / correction2_sqrt + eps) after the
// moment updates, with the bias corrections folded into two constants.
struct AdamStep {
  float step_size;
  float correction2_sqrt;
  float beta1, beta2;
  float one_minus_beta1, one_minus_beta2;
  float eps;
};

// Bias corrections in double, as torch computes them in Python floats.
inline AdamStep MakeAdamStep(double lr, double beta1, double beta2, double eps, int64_t step) {
  const double t = static_cast<double>(step);
  return AdamStep{
      static_cast<float>(lr / (1.0 - std::pow(beta1, t))),
      static_cast<float>(std::sqrt(1.0 - std::pow(beta2, t))),
      static_cast<float>(beta1),
      static_cast<float>(beta2),
      static_cast<float>(1.0 - beta1),
      static_cast<float>(1.0 - beta2),
      static_cast<float>(eps),
  };
}

}  // namespace tfm

// The attributes' reader needs the op registry, which nvcc (compiling
// adam_cuda.cu, which needs only AdamStep) is not given.
#ifndef __CUDACC__
#include "core/op_registry.h"
#include "core/status_macros.h"

namespace tfm {

inline absl::StatusOr<AdamStep> ReadAdamStep(const KernelContext& context) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(double lr, attrs.Get<double>("lr"));
  TFM_ASSIGN_OR_RETURN(double beta1, attrs.Get<double>("beta1"));
  TFM_ASSIGN_OR_RETURN(double beta2, attrs.Get<double>("beta2"));
  TFM_ASSIGN_OR_RETURN(double eps, attrs.Get<double>("eps"));
  TFM_ASSIGN_OR_RETURN(int64_t step, attrs.Get<int64_t>("step"));
  return MakeAdamStep(lr, beta1, beta2, eps, step);
}

}  // namespace tfm
#endif  // __CUDACC__

#endif  // TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_
