#include "core/data/file_io.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

// What a path names once its symbolic links are followed.
enum class Destination {
  kMissing,     // Created by the rename.
  kRegular,     // Replaced by the rename.
  kStream,      // A device or FIFO: written in place.
  kDescriptor,  // An open descriptor (/dev/stdout): appended to in place.
};

struct ResolvedPath {
  std::string target;
  Destination kind;
};

// Linux's own limit on links followed in one lookup (MAXSYMLINKS).
constexpr int kMaxSymbolicLinks = 40;

// statfs's f_type for /proc (linux/magic.h's PROC_SUPER_MAGIC).
constexpr long kProcFileSystem = 0x9fa0;

// The directory part of `path` with its slash ("a/b" -> "a/", "b" -> "").
std::string DirectoryPrefix(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// "out.txt" or, where links were followed, "out.txt (-> /data/out.txt)".
std::string Describe(const std::string& path, const std::string& target) {
  return path == target ? path : absl::StrCat(path, " (-> ", target, ")");
}

absl::StatusOr<std::string> ReadSymbolicLink(const std::string& link) {
  // st_size of a link is unreliable (0 under /proc): grow until it fits.
  std::string buffer(256, '\0');
  while (true) {
    const ssize_t n = readlink(link.c_str(), &buffer[0], buffer.size());
    if (n < 0) return PosixError("cannot read symbolic link", link);
    if (static_cast<size_t>(n) < buffer.size()) return buffer.substr(0, n);
    buffer.resize(buffer.size() * 2);
  }
}

// Whether the links in `directory` are /proc's: /proc/self/fd/N, and so
// /dev/fd/N and /dev/stdout, name an open descriptor, whose readlink text
// ("pipe:[123]", or the path of a file a shell opened with >>) is no path
// to create or replace.
bool IsProcDirectory(const std::string& directory) {
  struct statfs info;
  return statfs(directory.empty() ? "." : directory.c_str(), &info) == 0 &&
         info.f_type == kProcFileSystem;
}

// Follows symbolic links by hand rather than with realpath(3), which fails
// on a dangling link: `--output=link` to a file not yet written should
// create that file, as a shell redirection does.
absl::StatusOr<ResolvedPath> Resolve(const std::string& path) {
  std::string current = path;
  for (int links = 0; links <= kMaxSymbolicLinks; ++links) {
    struct stat info;
    if (lstat(current.c_str(), &info) != 0) {
      if (errno == ENOENT) return ResolvedPath{current, Destination::kMissing};
      return PosixError("cannot write", Describe(path, current));
    }
    if (S_ISLNK(info.st_mode)) {
      if (IsProcDirectory(DirectoryPrefix(current))) {
        return ResolvedPath{current, Destination::kDescriptor};
      }
      absl::StatusOr<std::string> link = ReadSymbolicLink(current);
      if (!link.ok()) return link.status();
      current = (!link->empty() && (*link)[0] == '/') ? *link : DirectoryPrefix(current) + *link;
      continue;
    }
    if (S_ISDIR(info.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot write ", Describe(path, current), ": ", std::strerror(EISDIR)));
    }
    return ResolvedPath{current,
                        S_ISREG(info.st_mode) ? Destination::kRegular : Destination::kStream};
  }
  errno = ELOOP;
  return PosixError("cannot write", path);
}

// 64 bits that another process cannot guess, so nobody can plant a file or
// link at the temporary name beforehand (O_EXCL would refuse it anyway; this
// keeps such a plant from making every write fail).
uint64_t UnpredictableBits() {
  static std::atomic<uint64_t> counter{0};
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof(bits), GRND_NONBLOCK) != sizeof(bits)) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    bits = static_cast<uint64_t>(now.tv_sec) * 1000000007u + now.tv_nsec;
  }
  // The counter keeps two threads apart even if the entropy failed.
  return bits ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15u);
}

// Creates an empty file beside `target` that no one else has opened. The
// name keeps the ".tmp.<pid>" tag that checkpoint_directory.cc and people
// cleaning up after a crash recognise.
absl::StatusOr<std::pair<std::string, int>> CreateTemporaryBeside(const std::string& target) {
  for (int attempt = 0;; ++attempt) {
    std::string temp = absl::StrCat(target, ".tmp.", getpid(), ".",
                                    absl::Hex(UnpredictableBits(), absl::kZeroPad16));
    // 0666 lets the umask decide, as for any new file; an existing file's
    // mode is copied at Commit.
    const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0) return std::make_pair(std::move(temp), fd);
    if (errno != EEXIST || attempt == 100) return PosixError("cannot create", temp);
  }
}

// The replaced file's owner (where this process may set it) and permission
// bits go to its replacement: a read-only output stays read-only.
absl::Status KeepMetadata(int fd, const std::string& target, const std::string& temp) {
  struct stat old_file;
  if (lstat(target.c_str(), &old_file) != 0 || !S_ISREG(old_file.st_mode)) {
    return absl::OkStatus();  // New, or no longer a file: nothing to keep.
  }
  struct stat new_file;
  if (fstat(fd, &new_file) != 0) return PosixError("cannot stat", temp);
  if (new_file.st_uid != old_file.st_uid || new_file.st_gid != old_file.st_gid) {
    // Best effort: only root may give a file away. Before fchmod, because
    // fchown clears set-user-ID bits.
    (void)fchown(fd, old_file.st_uid, old_file.st_gid);
  }
  if (fchmod(fd, old_file.st_mode & 07777) != 0) return PosixError("cannot set the mode of", temp);
  return absl::OkStatus();
}

}  // namespace

absl::Status PosixError(absl::string_view what, const std::string& path) {
  const std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(errno));
  return errno == ENOENT ? absl::NotFoundError(message) : absl::InternalError(message);
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

absl::Status SyncDirectory(const std::string& directory) {
  const int fd = open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("cannot open directory", directory);
  const bool synced = fsync(fd) == 0;
  absl::Status status = synced ? absl::OkStatus() : PosixError("cannot flush directory", directory);
  close(fd);
  return status;
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::Create(const std::string& path) {
  absl::StatusOr<ResolvedPath> resolved = Resolve(path);
  if (!resolved.ok()) return resolved.status();
  if (resolved->kind == Destination::kStream || resolved->kind == Destination::kDescriptor) {
    // No O_TRUNC and no O_CREAT: if the device vanished since lstat, fail
    // rather than create a file in /dev. A descriptor is appended to, as a
    // shell's `>>` (or the output a `>` file already holds) expects; a
    // block device must not be (its end is no place to write).
    const int append = resolved->kind == Destination::kDescriptor ? O_APPEND : 0;
    const int fd = open(resolved->target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | append);
    if (fd < 0) return PosixError("cannot open", Describe(path, resolved->target));
    return AtomicFileWriter(path, std::move(resolved->target), "", fd);
  }
  absl::StatusOr<std::pair<std::string, int>> temp = CreateTemporaryBeside(resolved->target);
  if (!temp.ok()) return temp.status();
  return AtomicFileWriter(path, std::move(resolved->target), std::move(temp->first), temp->second);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      target_(std::move(other.target_)),
      temp_(std::move(other.temp_)),
      fd_(std::exchange(other.fd_, -1)) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  close(fd_);
  if (replacing()) unlink(temp_.c_str());
}

absl::Status AtomicFileWriter::Append(absl::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  return WriteAll(fd_, data, written());
}

absl::Status AtomicFileWriter::WriteAt(uint64_t offset, absl::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  while (!data.empty()) {
    const ssize_t n = pwrite(fd_, data.data(), data.size(), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError(absl::StrCat("cannot write at offset ", offset, " of"), written());
    data.remove_prefix(n);
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already committed"));
  const int fd = std::exchange(fd_, -1);
  if (!replacing()) {
    // A pipe or terminal has no disk to flush to; the reader has the bytes.
    return close(fd) == 0 ? absl::OkStatus() : PosixError("cannot close", path_);
  }
  absl::Status status = KeepMetadata(fd, target_, temp_);
  if (status.ok() && fsync(fd) != 0) status = PosixError("cannot flush", temp_);
  if (close(fd) != 0 && status.ok()) status = PosixError("cannot close", temp_);
  if (status.ok() && rename(temp_.c_str(), target_.c_str()) != 0) {
    status = PosixError("cannot rename to", Describe(path_, target_));
  }
  if (!status.ok()) {
    unlink(temp_.c_str());
    return status;
  }
  const std::string directory = DirectoryPrefix(target_);
  return SyncDirectory(directory.empty() ? "." : directory);
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  absl::StatusOr<AtomicFileWriter> file = AtomicFileWriter::Create(path);
  if (!file.ok()) return file.status();
  absl::Status status = file->Append(contents);
  return status.ok() ? file->Commit() : status;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("cannot open", path);
  std::string contents;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const absl::Status status = PosixError("cannot read", path);
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
