// The two ways the trainer writes files. Snapshots (checkpoints, plots, a
// rewritten CSV) are replaced atomically by core/data/file_io.h's
// AtomicFileWriter: written to a temporary file beside the target, flushed
// to disk and renamed over it, so readers see the old or the new file, never
// a mix. Logs (CSV rows, TensorBoard events) grow by appends of whole
// records, each one system call, so live readers see each record at once and
// a crash cuts at most the last one.
#ifndef TFM_RUNTIME_TRAIN_FILE_WRITERS_H_
#define TFM_RUNTIME_TRAIN_FILE_WRITERS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
// AtomicFileWriter, WriteAll, SyncDirectory and PosixError live on the
// ground floor, shared with the data tools; the trainer's callers include
// them from here.
#include "core/data/file_io.h"

namespace tfm {

// A file opened for appending (created if missing).
class AppendOnlyFile {
 public:
  static absl::StatusOr<AppendOnlyFile> Open(const std::string& path);
  AppendOnlyFile(AppendOnlyFile&& other) noexcept;
  AppendOnlyFile& operator=(AppendOnlyFile&&) = delete;
  ~AppendOnlyFile();

  // Writes `record` at the end with one write(2) call (retried only if the
  // kernel takes part of it).
  absl::Status Append(absl::string_view record);
  const std::string& path() const { return path_; }

 private:
  AppendOnlyFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_FILE_WRITERS_H_
