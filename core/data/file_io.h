// Whole-file reads, and writes that readers see complete or not at all: a
// crash during training must not leave a truncated tokenizer model that a
// later run would load.
#ifndef TFM_CORE_DATA_FILE_IO_H_
#define TFM_CORE_DATA_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// Writes `contents` to a temporary file beside `path`, flushes it to disk
// and renames it over `path` (atomic within one file system).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Reads the whole file; NotFound names the path.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// Creates `path` and any missing parents (like mkdir -p); an existing
// directory is fine. Errors name the directory that could not be made.
absl::Status MakeDirectories(const std::string& path);

}  // namespace tfm

#endif  // TFM_CORE_DATA_FILE_IO_H_
