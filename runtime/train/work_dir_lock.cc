#include "runtime/train/work_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/data/file_io.h"
#include "core/paths.h"

namespace tfm {

absl::StatusOr<WorkDirLock> WorkDirLock::Acquire(const std::string& work_dir) {
  const std::string path = JoinPath(work_dir, ".lock");
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return PosixError("cannot open", path);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char buffer[32] = {};
    const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
    close(fd);
    if (error != EWOULDBLOCK) {
      errno = error;
      return PosixError("cannot lock", path);
    }
    int64_t pid = 0;
    const bool known =
        n > 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(buffer, n)), &pid);
    return absl::FailedPreconditionError(absl::StrCat(
        "the work directory ", work_dir, " is in use by another training run",
        known ? absl::StrCat(" (pid ", pid, ")") : std::string(),
        ": wait for it to end, stop it (it writes a checkpoint), or give another --workdir"));
  }
  // The holder's pid, for the message a second run gets.
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const absl::Status status = PosixError("cannot write", path);
    close(fd);
    return status;
  }
  return WorkDirLock(fd);
}

WorkDirLock::WorkDirLock(WorkDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

WorkDirLock::~WorkDirLock() {
  if (fd_ >= 0) close(fd_);  // Closing releases the lock.
}

}  // namespace tfm
