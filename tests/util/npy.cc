#include "tests/util/npy.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace tfm {
namespace testing {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

absl::StatusOr<std::string> Descr(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return std::string("<f4");
    case DType::kI32:
      return std::string("<i4");
    case DType::kI64:
      return std::string("<i8");
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("npy: no .npy type for dtype ", DTypeName(dtype)));
  }
}

// Everything after "'key':" in the header dict (the caller parses the value:
// a header is a Python literal, and each key has its own value syntax).
absl::StatusOr<absl::string_view> ValueOf(absl::string_view header, absl::string_view key) {
  const std::string quoted_key = absl::StrCat("'", key, "'");
  const size_t at = header.find(quoted_key);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("npy: header lacks ", key, ": ", header));
  }
  absl::string_view rest = header.substr(at + quoted_key.size());
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, ":")) {
    return absl::InvalidArgumentError(absl::StrCat("npy: malformed header: ", header));
  }
  return absl::StripLeadingAsciiWhitespace(rest);
}

absl::StatusOr<Shape> ParseShape(absl::string_view header) {
  TFM_ASSIGN_OR_RETURN(absl::string_view rest, ValueOf(header, "shape"));
  const size_t open = rest.find('(');
  const size_t close = rest.find(')');
  if (open != 0 || close == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("npy: malformed shape: ", header));
  }
  Shape shape;
  for (absl::string_view part : absl::StrSplit(rest.substr(1, close - 1), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;  // "(3,)" and "()".
    int64_t extent;
    if (!absl::SimpleAtoi(part, &extent) || extent < 0) {
      return absl::InvalidArgumentError(absl::StrCat("npy: malformed shape: ", header));
    }
    shape.push_back(extent);
  }
  return shape;
}

}  // namespace

absl::Status WriteNpy(const std::string& path, const Tensor& tensor) {
  if (!tensor.device().is_cpu()) {
    return absl::InvalidArgumentError("npy: WriteNpy needs a host tensor");
  }
  TFM_ASSIGN_OR_RETURN(std::string descr, Descr(tensor.dtype()));
  std::vector<std::string> extents;
  for (int64_t extent : tensor.shape()) extents.push_back(absl::StrCat(extent));
  const std::string shape = tensor.rank() == 1
                                ? absl::StrCat("(", extents[0], ",)")
                                : absl::StrCat("(", absl::StrJoin(extents, ", "), ")");
  std::string header = absl::StrCat("{'descr': '", descr,
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Version 1.0: magic, 2 version bytes, a 2-byte little-endian header length;
  // the header is space-padded and ends in '\n' so that data starts on a
  // multiple of 64 bytes.
  const size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 65535) return absl::InvalidArgumentError("npy: header too long");
  std::ofstream file(path, std::ios::binary);
  if (!file) return absl::InternalError(absl::StrCat("npy: cannot write ", path));
  const uint16_t length = static_cast<uint16_t>(header.size());
  const char prefix[] = {1, 0, static_cast<char>(length & 0xff),
                         static_cast<char>(length >> 8)};
  file.write(kMagic, kMagicSize);
  file.write(prefix, sizeof(prefix));
  file.write(header.data(), header.size());
  file.write(static_cast<const char*>(tensor.raw_data()), tensor.nbytes());
  if (!file) return absl::InternalError(absl::StrCat("npy: short write to ", path));
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("npy: cannot open ", path));
  const std::string bytes((std::istreambuf_iterator<char>(file)),
                          std::istreambuf_iterator<char>());
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("npy: not an .npy file: ", path));
  }
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  const int major = byte(kMagicSize);
  size_t header_length, header_start;
  if (major == 1) {
    header_length = byte(8) | (byte(9) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError("npy: truncated header");
    header_length = byte(8) | (byte(9) << 8) | (byte(10) << 16) |
                    (static_cast<size_t>(byte(11)) << 24);
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("npy: unknown version ", major));
  }
  if (bytes.size() < header_start + header_length) {
    return absl::InvalidArgumentError(absl::StrCat("npy: truncated header in ", path));
  }
  const absl::string_view header(bytes.data() + header_start, header_length);
  TFM_ASSIGN_OR_RETURN(absl::string_view order, ValueOf(header, "fortran_order"));
  if (!absl::StartsWith(order, "False")) {
    return absl::InvalidArgumentError(absl::StrCat("npy: Fortran order in ", path));
  }
  TFM_ASSIGN_OR_RETURN(absl::string_view descr_value, ValueOf(header, "descr"));
  const absl::string_view descr = descr_value.substr(1, 3);  // Inside the quotes.
  TFM_ASSIGN_OR_RETURN(Shape shape, ParseShape(header));
  const int64_t count = NumElements(shape);
  const char* data = bytes.data() + header_start + header_length;
  const size_t available = bytes.size() - header_start - header_length;
  const auto need = [&](size_t element_bytes) -> absl::Status {
    if (available < count * element_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("npy: truncated data in ", path));
    }
    return absl::OkStatus();
  };
  if (descr == "<f8") {
    TFM_RETURN_IF_ERROR(need(8));
    TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, DType::kF32));
    float* out = tensor.data<float>();
    for (int64_t i = 0; i < count; ++i) {
      double value;
      std::memcpy(&value, data + 8 * i, 8);
      out[i] = static_cast<float>(value);
    }
    return tensor;
  }
  DType dtype;
  if (descr == "<f4") {
    dtype = DType::kF32;
  } else if (descr == "<i4") {
    dtype = DType::kI32;
  } else if (descr == "<i8") {
    dtype = DType::kI64;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: unsupported element type '", descr, "' in ", path));
  }
  TFM_RETURN_IF_ERROR(need(DTypeSize(dtype)));
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(shape, dtype));
  std::memcpy(tensor.raw_data(), data, tensor.nbytes());
  return tensor;
}

}  // namespace testing
}  // namespace tfm
