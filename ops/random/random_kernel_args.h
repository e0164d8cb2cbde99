// What the random kernels of every device read from their context.
#ifndef TFM_OPS_RANDOM_RANDOM_KERNEL_ARGS_H_
#define TFM_OPS_RANDOM_RANDOM_KERNEL_ARGS_H_

#include <vector>

#include "core/op_registry.h"
#include "core/rng.h"
#include "core/status_macros.h"

namespace tfm {

struct RandomKernelArgs {
  PhiloxState state;
  float a;       // low (uniform) or mean (normal).
  float b;       // high (uniform) or stddev (normal).
  Tensor* out;   // Allocated on the kernel's device.
};

inline absl::StatusOr<RandomKernelArgs> ReadRandomKernelArgs(KernelContext& context,
                                                             bool normal) {
  const Attrs& attrs = context.attrs();
  TFM_ASSIGN_OR_RETURN(std::vector<int64_t> shape, attrs.Get<std::vector<int64_t>>("shape"));
  TFM_ASSIGN_OR_RETURN(PhiloxState state, PhiloxStateFromAttrs(attrs));
  TFM_ASSIGN_OR_RETURN(double a, attrs.Get<double>(normal ? "mean" : "low"));
  TFM_ASSIGN_OR_RETURN(double b, attrs.Get<double>(normal ? "stddev" : "high"));
  TFM_ASSIGN_OR_RETURN(Tensor * out,
                       context.AllocateOutput(0, Shape(shape.begin(), shape.end()), DType::kF32));
  return RandomKernelArgs{state, static_cast<float>(a), static_cast<float>(b), out};
}

}  // namespace tfm

#endif  // TFM_OPS_RANDOM_RANDOM_KERNEL_ARGS_H_
