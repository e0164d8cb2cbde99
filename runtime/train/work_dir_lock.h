// One training run per work directory. Two runs on one directory would each
// train the vocabulary, interleave their rows in metrics.csv and prune each
// other's checkpoints; the second is refused at start instead, naming the
// process that holds the directory.
//
// An advisory lock (flock) on `<work_dir>/.lock`, which the kernel releases
// when the process ends however it ends, so a crashed run leaves nothing to
// clean up; the file keeps the holder's pid for the message.
#ifndef TFM_RUNTIME_TRAIN_WORK_DIR_LOCK_H_
#define TFM_RUNTIME_TRAIN_WORK_DIR_LOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace tfm {

class WorkDirLock {
 public:
  // Takes the lock of the existing directory `work_dir`; FailedPrecondition
  // naming it and the holder's pid when another process holds it.
  static absl::StatusOr<WorkDirLock> Acquire(const std::string& work_dir);

  WorkDirLock(WorkDirLock&& other) noexcept;
  WorkDirLock& operator=(WorkDirLock&& other) = delete;
  ~WorkDirLock();  // Releases it.

 private:
  explicit WorkDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_WORK_DIR_LOCK_H_
