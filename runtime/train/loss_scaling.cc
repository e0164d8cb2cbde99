#include "runtime/train/loss_scaling.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace tfm {

LossScaling LossScalingFromConfig(const config::TrainConfig& train, DType compute_dtype) {
  LossScaling scaling;
  const std::string& mode = train.loss_scaling();
  scaling.dynamic = mode == "dynamic" || (mode == "auto" && compute_dtype == DType::kF16);
  scaling.initial_scale = train.initial_loss_scale();
  scaling.window = train.loss_scale_window();
  scaling.min_scale = train.min_loss_scale();
  return scaling;
}

LossScaleState InitialLossScale(const LossScaling& scaling) {
  return LossScaleState{scaling.dynamic ? scaling.initial_scale : 1.0, 0};
}

LossScaleState AfterAppliedUpdate(const LossScaling& scaling, LossScaleState state) {
  if (!scaling.dynamic) return state;
  if (++state.clean_updates >= scaling.window && state.scale < kMaxLossScale) {
    state.scale = std::min(kMaxLossScale, 2 * state.scale);
    state.clean_updates = 0;
  }
  return state;
}

absl::StatusOr<LossScaleState> AfterOverflow(const LossScaling& scaling, LossScaleState state,
                                             int64_t update) {
  const double halved = state.scale / 2;
  if (halved < scaling.min_scale) {
    return absl::InternalError(absl::StrCat(
        "training diverged: update ", update, "'s gradients are not finite even at loss scale ",
        state.scale, ", and halving it would pass train.min_loss_scale ", scaling.min_scale,
        " (lower the learning rate or raise warmup_steps; or train in bf16, which needs no "
        "loss scaling, where the GPU has it)"));
  }
  return LossScaleState{halved, 0};
}

}  // namespace tfm
