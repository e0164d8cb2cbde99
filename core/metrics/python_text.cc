#include "core/metrics/python_text.h"

namespace tfm {
namespace {

// Decodes the code point starting at text[pos] and stores its byte length in
// *length. Invalid sequences decode as one byte, U+FFFD, so that they are
// never mistaken for whitespace and never stop a scan.
char32_t DecodeAt(absl::string_view text, size_t pos, size_t* length) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(pos);
  *length = 1;
  if (lead < 0x80) return lead;
  size_t extra;
  char32_t code_point;
  char32_t minimum;
  if ((lead & 0xE0) == 0xC0) {
    extra = 1, code_point = lead & 0x1F, minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    extra = 2, code_point = lead & 0x0F, minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    extra = 3, code_point = lead & 0x07, minimum = 0x10000;
  } else {
    return 0xFFFD;
  }
  if (pos + extra >= text.size()) return 0xFFFD;  // Truncated sequence.
  for (size_t i = 1; i <= extra; ++i) {
    const unsigned char next = byte(pos + i);
    if ((next & 0xC0) != 0x80) return 0xFFFD;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  if (code_point < minimum || code_point > 0x10FFFF ||
      (code_point >= 0xD800 && code_point <= 0xDFFF)) {
    return 0xFFFD;
  }
  *length = extra + 1;
  return code_point;
}

// The byte length of the whitespace code point at text[pos], or 0.
size_t SpaceLengthAt(absl::string_view text, size_t pos) {
  size_t length;
  const char32_t code_point = DecodeAt(text, pos, &length);
  return IsPythonSpace(code_point) ? length : 0;
}

}  // namespace

bool IsPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::vector<size_t> CodePointOffsets(absl::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    size_t length;
    DecodeAt(text, pos, &length);
    pos += length;
  }
  offsets.push_back(text.size());
  return offsets;
}

std::vector<absl::string_view> PythonSplit(absl::string_view text) {
  std::vector<absl::string_view> fields;
  size_t pos = 0;
  size_t start = std::string::npos;
  while (pos < text.size()) {
    const size_t space = SpaceLengthAt(text, pos);
    if (space > 0) {
      if (start != std::string::npos) fields.push_back(text.substr(start, pos - start));
      start = std::string::npos;
      pos += space;
    } else {
      if (start == std::string::npos) start = pos;
      size_t length;
      DecodeAt(text, pos, &length);
      pos += length;
    }
  }
  if (start != std::string::npos) fields.push_back(text.substr(start));
  return fields;
}

absl::string_view PythonRstrip(absl::string_view text) {
  size_t end = 0;  // One past the last non-space code point.
  for (size_t pos = 0; pos < text.size();) {
    const size_t space = SpaceLengthAt(text, pos);
    if (space > 0) {
      pos += space;
    } else {
      size_t length;
      DecodeAt(text, pos, &length);
      pos += length;
      end = pos;
    }
  }
  return text.substr(0, end);
}

std::string RemovePythonSpaces(absl::string_view text) {
  std::string joined;
  joined.reserve(text.size());
  for (absl::string_view field : PythonSplit(text)) joined.append(field.data(), field.size());
  return joined;
}

}  // namespace tfm
