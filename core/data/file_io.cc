#include "core/data/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(errno));
  return errno == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  // The process id keeps concurrent writers (two runs sharing a work
  // directory) from writing into the same temporary file.
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temp);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const absl::Status status = ErrnoError("cannot write", temp);
      close(fd);
      unlink(temp.c_str());
      return status;
    }
    written += n;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    const absl::Status status = ErrnoError("cannot flush", temp);
    unlink(temp.c_str());
    return status;
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const absl::Status status = ErrnoError("cannot rename to", path);
    unlink(temp.c_str());
    return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const absl::Status status = ErrnoError("cannot read", path);
      close(fd);
      return status;
    }
    if (n == 0) break;
    contents.append(buffer, n);
  }
  close(fd);
  return contents;
}

absl::Status MakeDirectories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create directory ", prefix, ": ", std::strerror(errno)));
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace tfm
