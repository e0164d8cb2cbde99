#include "core/metrics/text_lines.h"

#include <zlib.h>

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/metrics/python_text.h"

namespace tfm {

absl::StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path) {
  // gzread passes files that are not gzip through unchanged, so one path
  // serves both.
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  }
  std::string contents;
  char buffer[1 << 16];
  int read;
  while ((read = gzread(file.get(), buffer, sizeof(buffer))) > 0) contents.append(buffer, read);
  if (read < 0) {
    int code;
    return absl::DataLossError(
        absl::StrCat("error reading '", path, "': ", gzerror(file.get(), &code)));
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string::npos) end = contents.size();
    lines.push_back(contents.substr(start, end - start));
    if (!IsValidUtf8(lines.back())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", lines.size(), ": line is not valid UTF-8"));
    }
    start = end + 1;
  }
  return lines;
}

}  // namespace tfm
