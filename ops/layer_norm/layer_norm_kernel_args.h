// What the layer_norm kernels of every device read from their context.
#ifndef TFM_OPS_LAYER_NORM_LAYER_NORM_KERNEL_ARGS_H_
#define TFM_OPS_LAYER_NORM_LAYER_NORM_KERNEL_ARGS_H_

#include "absl/status/statusor.h"
#include "core/op_registry.h"

namespace tfm {

// PyTorch's default; the attribute "eps" overrides it.
inline constexpr double kLayerNormDefaultEps = 1e-5;

inline absl::StatusOr<double> LayerNormEps(const KernelContext& context) {
  return context.attrs().GetOr<double>("eps", kLayerNormDefaultEps);
}

}  // namespace tfm

#endif  // TFM_OPS_LAYER_NORM_LAYER_NORM_KERNEL_ARGS_H_
