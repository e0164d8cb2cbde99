#include "core/metrics/text_lines.h"

#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/data/line_reader.h"
#include "core/data/utf8.h"
#include "core/metrics/python_text.h"

namespace tfm {

absl::StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path) {
  // No length limit (a metric must see every byte) and '\r' kept, as
  // sacreBLEU reads files.
  absl::StatusOr<std::unique_ptr<LineReader>> reader =
      LineReader::Open(path, std::numeric_limits<int64_t>::max(),
                       /*strip_carriage_return=*/false);
  if (!reader.ok()) return reader.status();
  std::vector<std::string> lines;
  std::string line;
  bool too_long = false;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&line, &too_long);
    if (!more.ok()) return more.status();
    if (!*more) break;
    if (!IsValidUtf8(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", (*reader)->line_number(), ": line is not valid UTF-8"));
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

absl::StatusOr<std::vector<std::string>> ReadStrippedTextLines(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> lines = ReadTextLines(path);
  if (!lines.ok()) return lines.status();
  for (std::string& line : *lines) line.resize(PythonRstrip(line).size());
  return lines;
}

}  // namespace tfm
