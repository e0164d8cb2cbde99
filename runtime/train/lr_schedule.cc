#include "runtime/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tfm {

absl::StatusOr<InverseSqrtSchedule> InverseSqrtSchedule::Create(int64_t d_model,
                                                                int64_t warmup_steps,
                                                                double scale) {
  if (d_model <= 0 || warmup_steps <= 0 || !(scale > 0.0) || !std::isfinite(scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lr schedule: need d_model > 0, warmup_steps > 0 and a finite scale > 0; got d_model ",
        d_model, ", warmup_steps ", warmup_steps, ", scale ", scale));
  }
  return InverseSqrtSchedule(scale / std::sqrt(static_cast<double>(d_model)),
                             std::pow(static_cast<double>(warmup_steps), -1.5));
}

double InverseSqrtSchedule::LearningRate(int64_t step) const {
  if (step <= 0) return 0.0;
  const double s = static_cast<double>(step);
  return factor_ * std::min(1.0 / std::sqrt(s), s * warmup_factor_);
}

double CooldownFactor(double fraction, double progress) {
  if (fraction <= 0) return 1.0;
  return std::clamp((1.0 - progress) / fraction, 0.0, 1.0);
}

}  // namespace tfm
