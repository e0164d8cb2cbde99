// Dynamic loss scaling's rule, one update's step, shared by the CPU and
// CUDA kernels of loss_scale_step (the only place it is written): the
// trainer keeps the scale on the device and reads it back with the other
// figures (runtime/train/loss_scaling.h says why the scale exists).
#ifndef TFM_OPS_LOSS_SCALE_LOSS_SCALE_KERNEL_ARGS_H_
#define TFM_OPS_LOSS_SCALE_LOSS_SCALE_KERNEL_ARGS_H_

#include <cstdint>

#include "core/host_device.h"

namespace tfm {

// After an update whose unscaled gradients' squares sum to
// `sum_of_squares`: not finite (an overflow, whatever the loss was, as
// PyTorch's GradScaler and fairseq decide), the scale halves and the count
// of clean updates restarts; finite, the count grows, and at `window` in a
// row the scale doubles (up to max_scale) and the count restarts. The
// scale stays a power of two, so every product with it is exact.
TFM_HOST_DEVICE void StepLossScale(float sum_of_squares, int64_t window, float max_scale,
                                          float* scale, float* clean_updates) {
  if (!(sum_of_squares - sum_of_squares == 0.0f)) {  // NaN or infinite.
    *scale = *scale * 0.5f;
    *clean_updates = 0.0f;
    return;
  }
  *clean_updates = *clean_updates + 1.0f;
  if (*clean_updates >= static_cast<float>(window) && *scale < max_scale) {
    const float doubled = *scale * 2.0f;
    *scale = doubled < max_scale ? doubled : max_scale;
    *clean_updates = 0.0f;
  }
}

}  // namespace tfm


#endif  // TFM_OPS_LOSS_SCALE_LOSS_SCALE_KERNEL_ARGS_H_
