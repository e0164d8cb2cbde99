// What the dropout kernels of every device read from their context: p, and
// from it the keep threshold and scale, so that the CPU and CUDA kernels
// decide and scale each element identically.
#ifndef TFM_OPS_DROPOUT_DROPOUT_KERNEL_ARGS_H_
#define TFM_OPS_DROPOUT_DROPOUT_KERNEL_ARGS_H_

#include "core/op_registry.h"
#include "core/rng.h"
#include "core/status_macros.h"

namespace tfm {

// i32 words in a packed keep mask of n elements: ceil(n / 32).
inline int64_t DropoutMaskWords(int64_t n) { return (n + 31) / 32; }

struct DropoutScaling {
  double p;
  // Element i is kept when Philox uniform i >= threshold.
  float threshold;
  // Kept elements are multiplied by 1 / (1 - p); p = 1 never keeps (uniforms
  // are < 1), so its infinite scale is replaced by an unused 0.
  float scale;
};

// The factor kept elements are multiplied by: 1 / (1 - p) in f32, or 0 for
// p = 1. Layers that undo a dropout themselves (relu_backward's scale) take
// it from here, so that it is the kernels' factor to the bit.
inline float DropoutKeepScale(double p) {
  return p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
}

inline absl::StatusOr<DropoutScaling> ReadDropoutScaling(const KernelContext& context) {
  TFM_ASSIGN_OR_RETURN(const double p, context.attrs().Get<double>("p"));
  return DropoutScaling{p, static_cast<float>(p), DropoutKeepScale(p)};
}

}  // namespace tfm

#endif  // TFM_OPS_DROPOUT_DROPOUT_KERNEL_ARGS_H_
