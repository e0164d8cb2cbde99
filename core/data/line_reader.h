// Streams the lines of a plain or gzip-compressed text file with bounded
// memory: a line longer than the limit is consumed but not kept, so one
// corrupt multi-gigabyte "line" cannot exhaust memory.
#ifndef TFM_CORE_DATA_LINE_READER_H_
#define TFM_CORE_DATA_LINE_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tfm {

class LineReader {
 public:
  // Opens `path`; gzip is detected from the content (zlib reads plain files
  // unchanged). A missing file is NotFound naming the path.
  // With strip_carriage_return, a "\r\n" ending is removed whole; without
  // it lines end only at "\n" and a '\r' stays (sacreBLEU's rule).
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                          int64_t max_line_bytes,
                                                          bool strip_carriage_return = true);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Reads the next line without its "\n" (or "\r\n", see Open). Returns false at the end
  // of the file. A line over max_line_bytes sets *too_long and leaves *line
  // holding only its first max_line_bytes bytes.
  absl::StatusOr<bool> Next(std::string* line, bool* too_long);

  // 1-based number of the line last returned.
  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }

 private:
  // Refills buffer_; sets at_end_ when the file is exhausted.
  absl::Status Fill();

  LineReader(std::string path, void* file, int64_t max_line_bytes, bool strip_carriage_return)
      : path_(std::move(path)),
        file_(file),
        max_line_bytes_(max_line_bytes),
        strip_carriage_return_(strip_carriage_return) {}

  std::string path_;
  void* file_;  // gzFile; kept opaque so users do not see zlib.h.
  int64_t max_line_bytes_;
  bool strip_carriage_return_;
  int64_t line_number_ = 0;
  // Decompressed bytes not yet returned: buffer_[buffer_pos_, buffer_.size()).
  std::string buffer_;
  size_t buffer_pos_ = 0;
  bool at_end_ = false;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_LINE_READER_H_
