// Dynamic loss scaling's device side: the scale lives in a device scalar,
// so a trainer neither reads an update's overflow back before the next
// update nor hands the model a scale from the host.
//   multi_tensor_scale_by: a list of f32 tensors multiplied in place by a
//     device scalar or its reciprocal (the loss's gradient seed, and the
//     unscaling of the gradients), one launch.
//   loss_scale_step: the next scale and count of clean updates from the
//     current ones and the update's gradient norm (StepLossScale).
#ifndef TFM_OPS_LOSS_SCALE_LOSS_SCALE_H_
#define TFM_OPS_LOSS_SCALE_LOSS_SCALE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor.h"

namespace tfm {

// Every tensor of `tensors` (f32, on `scale`'s device) times `scale` (an f32
// scalar), or times 1 / scale with `reciprocal`, in place: one rounding per
// element, so by a power of two exactly.
absl::Status MultiTensorScaleBy(absl::Span<const Tensor> tensors, const Tensor& scale,
                                bool reciprocal);

struct LossScaleTensors {
  Tensor scale;          // f32 scalar.
  Tensor clean_updates;  // f32 scalar (whole numbers).
};

// The state after an update whose unscaled gradients' squares sum to
// `grad_sum_of_squares` (an f32 scalar on the same device), as new
// tensors: the inputs are left as they were, so a trainer may hold each
// update's state until it reads it.
absl::StatusOr<LossScaleTensors> LossScaleStep(const LossScaleTensors& state,
                                               const Tensor& grad_sum_of_squares, int64_t window,
                                               double max_scale);

}  // namespace tfm

#endif  // TFM_OPS_LOSS_SCALE_LOSS_SCALE_H_
