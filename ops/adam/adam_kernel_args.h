// The constants of one Adam step, shared by the kernels of every device
// (plain C++: the CUDA launchers take them too).
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

#endif  // TFM_OPS_ADAM_ADAM_KERNEL_ARGS_H_
