#include "runtime/train/file_writers.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

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
