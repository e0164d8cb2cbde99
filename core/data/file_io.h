// Whole-file reads, and writes that lose nothing already written: a crash
// during training must not leave a truncated tokenizer model that a later
// run would load, and `--output=` must not clobber what the user named.
//
// Every write of a named output goes through AtomicFileWriter, which looks
// at what the path is before touching it:
// - missing, or a regular file: written to a temporary file beside it
//   (created exclusively, at a name that cannot be guessed in advance),
//   flushed to disk and renamed over it, so readers see the old or the new
//   file, never a mix; an existing file's permission bits (and, where the
//   process may, its owner) carry over to the new one;
// - a symbolic link (or a chain of them, or one whose target is missing):
//   the file it finally names is replaced as above and the link stays;
// - a character or block device or a FIFO (`/dev/null`, a terminal, a
//   named pipe): written in place as a stream, as a shell redirection
//   would; no temporary file, no rename, nothing to keep atomic;
// - a link in /proc naming an open descriptor (`/dev/stdout`, /dev/fd/N,
//   /proc/self/fd/N): appended to in place, whatever the descriptor is (a
//   pipe, or a file the shell opened for `>` or `>>`): replacing that file
//   would lose what it already holds;
// - a directory: an error naming it.
#ifndef TFM_CORE_DATA_FILE_IO_H_
#define TFM_CORE_DATA_FILE_IO_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// Writes a file in pieces by the policy above; a checkpoint is too large to
// build in memory first.
class AtomicFileWriter {
 public:
  // Looks at `path` and opens what will be written: the temporary file, or
  // the device or FIFO itself (opening a FIFO waits for its reader). A
  // regular target is untouched until Commit.
  static absl::StatusOr<AtomicFileWriter> Create(const std::string& path);

  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&& other) = delete;
  // Without Commit the temporary file is removed: a failed or abandoned
  // write leaves the target as it was (a stream keeps what it was sent).
  ~AtomicFileWriter();

  absl::Status Append(absl::string_view data);
  // Overwrites bytes already appended (a header whose counts are known only
  // at the end). A FIFO cannot seek: that is an error naming the path.
  absl::Status WriteAt(uint64_t offset, absl::string_view data);
  // fsync, keep the old file's mode, rename over the target, fsync the
  // directory (so the rename itself survives a power loss). A stream is
  // just closed.
  absl::Status Commit();

  // The path as given (a link stays the name the caller knows).
  const std::string& path() const { return path_; }

 private:
  AtomicFileWriter(std::string path, std::string target, std::string temp, int fd)
      : path_(std::move(path)), target_(std::move(target)), temp_(std::move(temp)), fd_(fd) {}

  // Whether bytes go to a temporary file (empty temp_: in place).
  bool replacing() const { return !temp_.empty(); }
  // What errors name: the temporary file, or the stream.
  const std::string& written() const { return replacing() ? temp_ : path_; }

  std::string path_;
  std::string target_;  // path_ with its symbolic links followed.
  std::string temp_;
  int fd_ = -1;
};

// Writes `contents` to `path` by AtomicFileWriter's policy.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Reads the whole file; NotFound names the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Creates `path` and any missing parents (like mkdir -p); an existing
// directory is fine. Errors name the directory that could not be made.
absl::Status MakeDirectories(const std::string& path);

// Writes all of `data` to `fd` (the file at `path`, for errors).
absl::Status WriteAll(int fd, absl::string_view data, const std::string& path);

// Flushes a directory's entries (created, renamed or removed files) to disk.
absl::Status SyncDirectory(const std::string& directory);

// The error for a failed system call on `path`, with errno's text:
// NotFound for ENOENT, Internal otherwise.
absl::Status PosixError(absl::string_view what, const std::string& path);

}  // namespace tfm

#endif  // TFM_CORE_DATA_FILE_IO_H_
