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

absl::Status CheckAboveMinimum(const LossScaling& scaling, const LossScaleState& after,
                               int64_t update) {
  if (after.scale >= scaling.min_scale) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "training diverged: update ", update, "'s gradients are not finite even at loss scale ",
      2 * after.scale, ", and halving it passed train.min_loss_scale ", scaling.min_scale,
      " (lower the learning rate or raise warmup_steps; or train in bf16, which needs no "
      "loss scaling, where the GPU has it)"));
}

}  // namespace tfm
