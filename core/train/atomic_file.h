// A file written in pieces that readers see complete or not at all: the
// pieces go to a temporary file beside the target, which is flushed to disk
// and renamed over the target on Commit. Checkpoints are too large to build
// in memory first, so core/data/file_io.h's whole-string write cannot serve.
#ifndef TFM_CORE_TRAIN_ATOMIC_FILE_H_
#define TFM_CORE_TRAIN_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

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

// Flushes a directory's entries (created, renamed or removed files) to disk.
absl::Status SyncDirectory(const std::string& directory);

// The error for a failed system call on `path`, with errno's text.
absl::Status PosixError(absl::string_view what, const std::string& path);

}  // namespace tfm

#endif  // TFM_CORE_TRAIN_ATOMIC_FILE_H_
