#include "runtime/train/checkpoint_schedule.h"

namespace tfm {

CheckpointSchedule CheckpointSchedule::FromConfig(const config::TrainConfig& train,
                                                  int64_t last_update, double last_seconds) {
  return CheckpointSchedule(train.checkpoint_every_steps(), train.checkpoint_every_minutes(),
                            last_update, last_seconds);
}

bool CheckpointSchedule::Due(int64_t update, double elapsed_seconds) const {
  if (update <= last_update_) return false;  // Nothing new to save.
  const bool by_updates = every_updates_ > 0 && update - last_update_ >= every_updates_;
  const bool by_time = every_seconds_ > 0 && elapsed_seconds - last_seconds_ >= every_seconds_;
  return by_updates || by_time;
}

}  // namespace tfm
