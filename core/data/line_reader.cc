#include "core/data/line_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tfm {

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path,
                                                             int64_t max_line_bytes,
                                                             bool strip_carriage_return) {
  // gzopen reports a missing file only through errno; check first so the
  // error is precise.
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is a directory, not a text file"));
  }
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::PermissionDeniedError(absl::StrCat("cannot open ", path));
  }
  gzbuffer(file, 1 << 17);
  return std::unique_ptr<LineReader>(
      new LineReader(path, file, max_line_bytes, strip_carriage_return));
}

LineReader::~LineReader() { gzclose(static_cast<gzFile>(file_)); }

absl::Status LineReader::Fill() {
  constexpr int kChunk = 1 << 16;
  buffer_.erase(0, buffer_pos_);
  buffer_pos_ = 0;
  const size_t old_size = buffer_.size();
  buffer_.resize(old_size + kChunk);
  const int n = gzread(static_cast<gzFile>(file_), &buffer_[old_size], kChunk);
  if (n <= 0) {
    // A truncated gzip stream ends with Z_BUF_ERROR, not a negative count.
    int code = Z_OK;
    const char* message = gzerror(static_cast<gzFile>(file_), &code);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      return absl::DataLossError(
          absl::StrCat(path_, ":", line_number_ + 1, ": read error: ", message));
    }
  }
  buffer_.resize(old_size + (n > 0 ? n : 0));
  if (n == 0) at_end_ = true;
  return absl::OkStatus();
}

// Scans with memchr rather than gzgets so that NUL bytes inside a line cannot
// merge it with the next one (which would break the alignment of two files).
absl::StatusOr<bool> LineReader::Next(std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  bool read_any = false;
  while (true) {
    if (buffer_pos_ == buffer_.size()) {
      if (at_end_) break;
      absl::Status status = Fill();
      if (!status.ok()) return status;
      continue;
    }
    read_any = true;
    const char* begin = buffer_.data() + buffer_pos_;
    const size_t available = buffer_.size() - buffer_pos_;
    const void* newline = std::memchr(begin, '\n', available);
    const size_t length =
        newline ? static_cast<const char*>(newline) - begin : available;
    const int64_t room = max_line_bytes_ - static_cast<int64_t>(line->size());
    if (static_cast<int64_t>(length) > room) {
      *too_long = true;
      line->append(begin, room > 0 ? room : 0);
    } else {
      line->append(begin, length);
    }
    buffer_pos_ += length;
    if (newline) {
      ++buffer_pos_;
      break;
    }
  }
  if (!read_any) return false;
  if (strip_carriage_return_ && !*too_long && !line->empty() && line->back() == '\r') {
    line->pop_back();
  }
  ++line_number_;
  return true;
}

}  // namespace tfm
