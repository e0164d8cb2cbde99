#include "runtime/train/file_writers.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tfm {

absl::Status PosixError(absl::string_view what, const std::string& path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(errno));
  return errno == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
}

absl::Status SyncDirectory(const std::string& directory) {
  const int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("cannot open directory", directory);
  const bool synced = fsync(fd) == 0;
  absl::Status status = synced ? absl::OkStatus() : PosixError("cannot flush directory", directory);
  close(fd);
  return status;
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(const std::string& path) {
  // The process id keeps two runs sharing a work directory apart.
  std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("cannot create", temp);
  return AtomicFileWriter(path, std::move(temp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), temp_(std::move(other.temp_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(temp_.c_str());
  }
}

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("cannot write", path);
    data.remove_prefix(n);
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Append(absl::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  return WriteAll(fd_, data, temp_);
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  const int fd = std::exchange(fd_, -1);
  if (fsync(fd) != 0 || close(fd) != 0) {
    absl::Status status = PosixError("cannot flush", temp_);
    unlink(temp_.c_str());
    return status;
  }
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) {
    absl::Status status = PosixError("cannot rename to", path_);
    unlink(temp_.c_str());
    return status;
  }
  const size_t slash = path_.rfind('/');
  return SyncDirectory(slash == std::string::npos ? "." : path_.substr(0, slash + 1));
}

}  // namespace tfm

namespace tfm {

absl::StatusOr<AppendOnlyFile> AppendOnlyFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return PosixError("cannot open", path);
  return AppendOnlyFile(path, fd);
}

AppendOnlyFile::AppendOnlyFile(AppendOnlyFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

AppendOnlyFile::~AppendOnlyFile() {
  if (fd_ >= 0) close(fd_);
}

absl::Status AppendOnlyFile::Append(absl::string_view record) {
  return WriteAll(fd_, record, path_);
}

}  // namespace tfm
