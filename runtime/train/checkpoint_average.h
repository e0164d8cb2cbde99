// Checkpoint averaging (Vaswani et al. 2017, section 6.1: the mean of the
// last 5 checkpoints for base models, 20 for big ones).
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_AVERAGE_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_AVERAGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tfm {

// Writes to `out_dir` a checkpoint whose weights are the element-wise mean
// of those in the checkpoint directories `paths` (computed in double,
// rounded once to each tensor's type), with the config, vocabulary and
// state of the last path and the averaged paths in state.averaged_from. It
// has no optimizer state: it is for decoding, not resuming.
//
// Streams: every input is verified against its MANIFEST first, then one
// tensor at a time is read from each model file, so a model of any size
// needs memory for about two copies of its largest tensor.
//
// The checkpoints must agree: config and vocabulary (checkpoint_match.h),
// and tensor names, dtypes and shapes; integer tensors, which a mean would
// corrupt, must be identical. Errors name the file that differs.
absl::Status AverageCheckpoints(const std::vector<std::string>& paths, const std::string& out_dir);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_AVERAGE_H_
