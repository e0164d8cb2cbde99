// The checkpoints of a work directory: finding them (for resume and
// averaging) and keeping only the last K, and the K best by validation.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/train/checkpoint.pb.h"

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

// A checkpoint's validation as a rank, higher better: its valid_score
// (by_score) or minus its valid_loss. None where no validation ran at its
// update, or the figure is NaN.
std::optional<double> ValidationRank(const train::TrainingState& state, bool by_score);

// The `count` checkpoints whose validation ranked best, oldest first: what
// `average --best=N` averages. They are ranked by the metric the newest
// validated checkpoint's run ranked by (TrainingState.ranked_by_score); a
// tie goes to the newer. InvalidArgument if fewer than `count` recorded a
// validation (saying how many did).
absl::StatusOr<std::vector<CheckpointEntry>> BestCheckpoints(const std::string& work_dir,
                                                             int count);

// Removes all but the newest `keep_last` checkpoints and the `keep_best`
// that BestCheckpoints would choose among the others (a checkpoint whose
// state cannot be read counts as unvalidated), and directories that saves
// cut short by a crash left behind. keep_last must be at least the number
// averaged at the end, or averaging has too few to use.
absl::Status PruneCheckpoints(const std::string& work_dir, int keep_last, int keep_best = 0);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_DIRECTORY_H_
