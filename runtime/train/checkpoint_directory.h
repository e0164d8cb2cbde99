// The checkpoints of a work directory: finding them (for resume and
// averaging) and keeping only the last K.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tfm {

struct CheckpointEntry {
  int64_t update = 0;
  std::string path;
};

// The committed checkpoint directories (checkpoint_<update> with a
// MANIFEST), oldest first. Checksums are not verified here: reading does.
absl::StatusOr<std::vector<CheckpointEntry>> ListCheckpoints(const std::string& work_dir);

// The newest committed checkpoint; NotFound (naming work_dir) if none.
absl::StatusOr<CheckpointEntry> LatestCheckpoint(const std::string& work_dir);

// The newest `count` checkpoints, oldest first: what `average --last=N`
// averages. InvalidArgument if fewer exist (saying how many do).
absl::StatusOr<std::vector<CheckpointEntry>> LastCheckpoints(const std::string& work_dir,
                                                             int count);

// Removes all but the newest `keep_last` checkpoints, and directories that
// saves cut short by a crash left behind. keep_last must be at least
// the number averaged at the end, or averaging has too few to use.
absl::Status PruneCheckpoints(const std::string& work_dir, int keep_last);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_
