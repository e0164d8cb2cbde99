// The two ways the trainer writes files. Snapshots (checkpoints, plots, a
// rewritten CSV) are replaced atomically: written to a temporary file beside
// the target, flushed to disk and renamed over it, so readers see the old
// or the new file, never a mix. Logs (CSV rows, TensorBoard events) grow by
// appends of whole records, each one system call, so live readers see each
// record at once and a crash cuts at most the last one.
#ifndef TFM_RUNTIME_TRAIN_FILE_WRITERS_H_
#define TFM_RUNTIME_TRAIN_FILE_WRITERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// Checkpoints are too large to build in memory first, so this writes in
// pieces (core/data/file_io.h's WriteFileAtomically takes a whole string).
class AtomicFileWriter {
 public:
  // Creates the temporary file; the target is untouched until Commit.
  static absl::StatusOr<AtomicFileWriter> Create(const std::string& path);

  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) = delete;
  // Without Commit the temporary file is removed: a failed or abandoned
  // write leaves the target as it was.
  ~AtomicFileWriter();

  absl::Status Append(absl::string_view data);
  // fsync, rename over the target, fsync the directory (so the rename itself
  // survives a power loss).
  absl::Status Commit();

  const std::string& path() const { return path_; }

 private:
  AtomicFileWriter(std::string path, std::string temp, int fd)
      : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}

  std::string path_;
  std::string temp_;
  int fd_ = -1;
};

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

// Writes all of `data` to `fd` (the file at `path`, for errors).
absl::Status WriteAll(int fd, absl::string_view data, const std::string& path);

// Flushes a directory's entries (created, renamed or removed files) to disk.
absl::Status SyncDirectory(const std::string& directory);

// The error for a failed system call on `path`, with errno's text.
absl::Status PosixError(absl::string_view what, const std::string& path);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_FILE_WRITERS_H_
