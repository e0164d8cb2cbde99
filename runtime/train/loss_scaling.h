// Dynamic loss scaling, for training in f16 (fairseq's --fp16, PyTorch's
// GradScaler): f16 has 5 exponent bits, so the small gradients of a deep
// model's backward flush to zero unless the loss is first multiplied by a
// large scale. The trainer multiplies the loss by the scale before backward
// and divides the gradients by it before the norm, clipping and Adam see
// them. The scale is a power of two, so on the f32 gradients both products
// are exact: with no overflow, a scaled update has the bits of an unscaled
// one (tested in f32 on the CPU). When the scaled gradients overflow (a
// non-finite norm), the update is skipped and the scale halved; after
// `window` updates in a row without one, it doubles, so it rides just below
// the largest value the gradients bear. bf16 has f32's exponent range and
// needs none of this.
#ifndef TFM_RUNTIME_TRAIN_LOSS_SCALING_H_
#define TFM_RUNTIME_TRAIN_LOSS_SCALING_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/config/task_config.pb.h"
#include "core/dtype.h"

namespace tfm {

// train.loss_scaling and its numbers, resolved for the run's dtype.
struct LossScaling {
  bool dynamic = false;
  double initial_scale = 128;  // fairseq's --fp16-init-scale.
  int64_t window = 2000;       // PyTorch's growth_interval.
  double min_scale = 1e-4;     // fairseq's --min-loss-scale.
};

// The largest scale the doubling reaches: loss_scale / target tokens stays
// a finite f32 however long a run goes without an overflow.
inline constexpr double kMaxLossScale = 18446744073709551616.0;  // 2^64

// "auto": dynamic when `compute_dtype` is f16, off otherwise; "dynamic":
// on whatever the dtype; "off". Config validation has checked the values.
LossScaling LossScalingFromConfig(const config::TrainConfig& train, DType compute_dtype);

// Where a run's scaling stands; saved in checkpoints, so a resumed run
// goes on with the scale it had.
struct LossScaleState {
  double scale = 1;           // What the loss is multiplied by (1: off).
  int64_t clean_updates = 0;  // Updates applied since the scale last changed.
};

// A run's first state: the initial scale when dynamic, else 1.
LossScaleState InitialLossScale(const LossScaling& scaling);

// The rule that moves the scale (halved after an overflow, doubled after
// `window` clean updates, up to kMaxLossScale) runs on the device:
// ops/loss_scale (StepLossScale). The trainer reads the state back with an
// update's other figures.

// After update `update`'s scaled gradients overflowed (and it was skipped)
// and the scale was halved to `after.scale`: falling below min_scale means
// the gradients are not finite at any scale (the run diverged), an error
// naming the update.
absl::Status CheckAboveMinimum(const LossScaling& scaling, const LossScaleState& after,
                               int64_t update);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_LOSS_SCALING_H_
