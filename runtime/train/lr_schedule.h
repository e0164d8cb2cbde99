// The Transformer paper's learning-rate schedule (Vaswani et al. 2017, 5.3):
//   lr(step) = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// linear warmup for `warmup_steps`, then decay with the inverse square root
// of the step. The peak, at step = warmup_steps, is
// scale * (d_model * warmup_steps)^-0.5 (7.0e-4 for the base model).
#ifndef TFM_RUNTIME_TRAIN_LR_SCHEDULE_H_
#define TFM_RUNTIME_TRAIN_LR_SCHEDULE_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace tfm {

class InverseSqrtSchedule {
 public:
  // InvalidArgument unless d_model > 0, warmup_steps > 0 and scale > 0.
  static absl::StatusOr<InverseSqrtSchedule> Create(int64_t d_model, int64_t warmup_steps = 4000,
                                                    double scale = 1.0);

  // The rate for the update numbered `step` (the first update is step 1, as
  // the Adam bias correction counts); 0 for step <= 0.
  double LearningRate(int64_t step) const;

 private:
  InverseSqrtSchedule(double factor, double warmup_factor)
      : factor_(factor), warmup_factor_(warmup_factor) {}

  double factor_;         // scale * d_model^-0.5
  double warmup_factor_;  // warmup^-1.5
};

// The factor of a budgeted run's cooldown (train.cooldown_fraction): 1 until
// `progress` (the fraction of the run done, in [0, 1]) reaches
// 1 - `fraction`, then falling linearly to 0 at progress 1. `fraction` 0:
// always 1.
double CooldownFactor(double fraction, double progress);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_LR_SCHEDULE_H_
