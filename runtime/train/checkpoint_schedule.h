// When to save a checkpoint: every N updates and/or every M minutes of
// training time since the last save (the paper saved every 10 minutes).
// Time is passed in, not read from a clock, so the policy is testable and
// follows the trainer's own elapsed time across resumes.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_SCHEDULE_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_SCHEDULE_H_

#include <cstdint>

#include "core/config/task_config.pb.h"

namespace tfm {

class CheckpointSchedule {
 public:
  // 0 disables either trigger. `last_update` and `last_seconds` are those of
  // the checkpoint a run resumes from (0 for a fresh run).
  CheckpointSchedule(int64_t every_updates, double every_minutes, int64_t last_update = 0,
                     double last_seconds = 0)
      : every_updates_(every_updates),
        every_seconds_(every_minutes * 60),
        last_update_(last_update),
        last_seconds_(last_seconds) {}
  // From train.checkpoint_every_steps and train.checkpoint_every_minutes.
  static CheckpointSchedule FromConfig(const config::TrainConfig& train, int64_t last_update = 0,
                                       double last_seconds = 0);

  // Whether to save after `update`, with `elapsed_seconds` of training so far.
  bool Due(int64_t update, double elapsed_seconds) const;
  void MarkSaved(int64_t update, double elapsed_seconds) {
    last_update_ = update;
    last_seconds_ = elapsed_seconds;
  }

 private:
  int64_t every_updates_;
  double every_seconds_;
  int64_t last_update_;
  double last_seconds_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_SCHEDULE_H_
