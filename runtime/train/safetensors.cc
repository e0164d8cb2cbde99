#include "runtime/train/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/check.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace tfm {

// The format is little-endian; so are the hosts we build for (x86-64, and
// aarch64 as Linux runs it), which lets tensors go to and from disk as they
// lie in memory.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes little-endian");

namespace {

constexpr char kMetadataKey[] = "__metadata__";
// The reference implementation refuses larger headers; so do we, so that a
// corrupt length fails clearly instead of allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeCode {
  DType dtype;
  const char* name;
};
constexpr DTypeCode kDTypeNames[] = {{DType::kF32, "F32"},
                                     {DType::kF16, "F16"},
                                     {DType::kBF16, "BF16"},
                                     {DType::kI32, "I32"},
                                     {DType::kI64, "I64"},
                                     {DType::kI8, "I8"}};

absl::StatusOr<DType> ParseSafetensorsDType(absl::string_view name) {
  for (const DTypeCode& entry : kDTypeNames) {
    if (name == entry.name) return entry.dtype;
  }
  std::vector<std::string> known;
  for (const DTypeCode& entry : kDTypeNames) known.push_back(entry.name);
  return absl::UnimplementedError(absl::StrCat(
      "dtype \"", name, "\" is not supported (supported: ", absl::StrJoin(known, ", "), ")"));
}

void AppendJsonString(absl::string_view text, std::string* out) {
  out->push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppend(out, "\\u00", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string EncodeHeader(const std::vector<TensorSpec>& specs,
                         const SafetensorsMetadata& metadata) {
  std::string json = "{";
  if (!metadata.empty()) {
    absl::StrAppend(&json, "\"", kMetadataKey, "\":{");
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) json.push_back(',');
      first = false;
      AppendJsonString(key, &json);
      json.push_back(':');
      AppendJsonString(value, &json);
    }
    json.append("}");
  }
  uint64_t offset = 0;
  for (const TensorSpec& spec : specs) {
    if (json.size() > 1) json.push_back(',');
    AppendJsonString(spec.name, &json);
    const uint64_t bytes = NumElements(spec.shape) * DTypeSize(spec.dtype);
    absl::StrAppend(&json, ":{\"dtype\":\"", SafetensorsDTypeName(spec.dtype), "\",\"shape\":[",
                    absl::StrJoin(spec.shape, ","), "],\"data_offsets\":[", offset, ",",
                    offset + bytes, "]}");
    offset += bytes;
  }
  json.push_back('}');
  // Pad so the data starts 8-byte aligned, as the reference writer does
  // (memory-mapping readers rely on it).
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string header(8, '\0');
  const uint64_t length = json.size();
  std::memcpy(header.data(), &length, 8);
  return header + json;
}

// A non-negative integer stored as a JSON number.
absl::StatusOr<uint64_t> JsonCount(const google::protobuf::Value& value) {
  const double number = value.number_value();
  if (value.kind_case() != google::protobuf::Value::kNumberValue || number < 0 ||
      number != std::floor(number) || number > 9.0e15) {
    return absl::InvalidArgumentError("expected a non-negative integer");
  }
  return static_cast<uint64_t>(number);
}

absl::Status PReadExactly(int fd, uint64_t offset, size_t bytes, char* out,
                          const std::string& path) {
  while (bytes > 0) {
    const ssize_t n = pread(fd, out, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return PosixError("cannot read", path);
    if (n == 0) return absl::DataLossError(absl::StrCat(path, ": file ends early (truncated?)"));
    out += n;
    offset += n;
    bytes -= n;
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view SafetensorsDTypeName(DType dtype) {
  for (const DTypeCode& entry : kDTypeNames) {
    if (entry.dtype == dtype) return entry.name;
  }
  TFM_CHECK(false, "dtype without a safetensors name");
  return "";
}

// Owns the descriptor; shared so readers can be copied and moved freely.
class SafetensorsReader::File {
 public:
  explicit File(int fd) : fd_(fd) {}
  ~File() { close(fd_); }
  int fd() const { return fd_; }

 private:
  int fd_;
};

absl::StatusOr<SafetensorsReader> SafetensorsReader::Open(const std::string& path) {
  SafetensorsReader reader;
  reader.path_ = path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("cannot open", path);
  reader.file_ = std::make_shared<File>(fd);
  struct stat info;
  if (fstat(fd, &info) != 0) return PosixError("cannot stat", path);
  const uint64_t file_size = info.st_size;
  auto corrupt = [&path](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid safetensors file: ", what));
  };
  if (file_size < 8) return corrupt(absl::StrCat("only ", file_size, " bytes"));
  uint64_t header_length = 0;
  TFM_RETURN_IF_ERROR(PReadExactly(fd, 0, 8, reinterpret_cast<char*>(&header_length), path));
  if (header_length > kMaxHeaderBytes || header_length > file_size - 8) {
    return corrupt(
        absl::StrCat("header length ", header_length, " exceeds the file's ", file_size, " bytes"));
  }
  std::string json(header_length, '\0');
  TFM_RETURN_IF_ERROR(PReadExactly(fd, 8, header_length, json.data(), path));
  google::protobuf::Struct header;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &header);
  if (!parsed.ok()) return corrupt(absl::StrCat("header is not JSON: ", parsed.ToString()));
  reader.data_start_ = 8 + header_length;
  const uint64_t data_bytes = file_size - reader.data_start_;

  for (const auto& [name, value] : header.fields()) {
    if (name == kMetadataKey) {
      for (const auto& [key, entry] : value.struct_value().fields()) {
        if (entry.kind_case() != google::protobuf::Value::kStringValue) {
          return corrupt(absl::StrCat("metadata \"", key, "\" is not a string"));
        }
        reader.metadata_[key] = entry.string_value();
      }
      continue;
    }
    const auto& fields = value.struct_value().fields();
    auto field = [&fields](const char* key) -> const google::protobuf::Value* {
      const auto it = fields.find(key);
      return it == fields.end() ? nullptr : &it->second;
    };
    const google::protobuf::Value* dtype = field("dtype");
    const google::protobuf::Value* shape = field("shape");
    const google::protobuf::Value* offsets = field("data_offsets");
    if (dtype == nullptr || shape == nullptr || offsets == nullptr ||
        offsets->list_value().values_size() != 2) {
      return corrupt(
          absl::StrCat("tensor \"", name, "\" lacks dtype, shape or a [begin, end] data_offsets"));
    }
    TensorSpec spec;
    spec.name = name;
    absl::StatusOr<DType> parsed_dtype = ParseSafetensorsDType(dtype->string_value());
    if (!parsed_dtype.ok()) {
      return absl::Status(
          parsed_dtype.status().code(),
          absl::StrCat(path, ": tensor \"", name, "\": ", parsed_dtype.status().message()));
    }
    spec.dtype = *parsed_dtype;
    for (const google::protobuf::Value& extent : shape->list_value().values()) {
      absl::StatusOr<uint64_t> size = JsonCount(extent);
      if (!size.ok()) return corrupt(absl::StrCat("tensor \"", name, "\" has a bad shape"));
      spec.shape.push_back(static_cast<int64_t>(*size));
    }
    absl::StatusOr<uint64_t> begin = JsonCount(offsets->list_value().values(0));
    absl::StatusOr<uint64_t> end = JsonCount(offsets->list_value().values(1));
    if (!begin.ok() || !end.ok() || *begin > *end) {
      return corrupt(absl::StrCat("tensor \"", name, "\" has bad data_offsets"));
    }
    const uint64_t expected = NumElements(spec.shape) * DTypeSize(spec.dtype);
    if (*end - *begin != expected) {
      return corrupt(absl::StrCat("tensor \"", name, "\" ", ShapeToString(spec.shape), " ",
                                  dtype->string_value(), " needs ", expected,
                                  " bytes, offsets give ", *end - *begin));
    }
    if (*end > data_bytes) {
      return corrupt(absl::StrCat("tensor \"", name, "\" ends at byte ", *end, " of the data, ",
                                  "which holds only ", data_bytes, " (truncated?)"));
    }
    reader.specs_.push_back(std::move(spec));
    reader.extents_.push_back({*begin, *end});
  }

  // File order, and a check that the tensors tile the data exactly: a gap
  // or overlap means a damaged header.
  std::vector<size_t> order(reader.specs_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&reader](size_t a, size_t b) {
    return reader.extents_[a].begin < reader.extents_[b].begin ||
           (reader.extents_[a].begin == reader.extents_[b].begin &&
            reader.extents_[a].end < reader.extents_[b].end);
  });
  std::vector<TensorSpec> specs;
  std::vector<Extent> extents;
  uint64_t covered = 0;
  for (const size_t i : order) {
    if (reader.extents_[i].begin != covered) {
      return corrupt(absl::StrCat("tensor \"", reader.specs_[i].name, "\" starts at byte ",
                                  reader.extents_[i].begin, ", expected ", covered));
    }
    covered = reader.extents_[i].end;
    specs.push_back(std::move(reader.specs_[i]));
    extents.push_back(reader.extents_[i]);
  }
  if (covered != data_bytes) {
    return corrupt(absl::StrCat(data_bytes - covered, " bytes after the last tensor"));
  }
  reader.specs_ = std::move(specs);
  reader.extents_ = std::move(extents);
  return reader;
}

absl::StatusOr<size_t> SafetensorsReader::IndexOf(absl::string_view name) const {
  for (size_t i = 0; i < specs_.size(); ++i) {
    if (specs_[i].name == name) return i;
  }
  return absl::NotFoundError(absl::StrCat(path_, " has no tensor \"", name, "\""));
}

absl::StatusOr<Tensor> SafetensorsReader::Read(absl::string_view name) const {
  TFM_ASSIGN_OR_RETURN(const size_t index, IndexOf(name));
  TFM_ASSIGN_OR_RETURN(Tensor tensor, Tensor::Empty(specs_[index].shape, specs_[index].dtype));
  TFM_RETURN_IF_ERROR(ReadInto(name, tensor));
  return tensor;
}

absl::Status SafetensorsReader::ReadInto(absl::string_view name, Tensor destination) const {
  TFM_ASSIGN_OR_RETURN(const size_t index, IndexOf(name));
  const TensorSpec& spec = specs_[index];
  if (!destination.device().is_cpu() || destination.dtype() != spec.dtype ||
      destination.shape() != spec.shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": tensor \"", name, "\" is ", SafetensorsDTypeName(spec.dtype),
        ShapeToString(spec.shape), ", cannot read it into ", destination.DebugString()));
  }
  return PReadExactly(file_->fd(), data_start_ + extents_[index].begin,
                      extents_[index].end - extents_[index].begin,
                      static_cast<char*>(destination.raw_data()), path_);
}

absl::StatusOr<NamedTensors> SafetensorsReader::ReadAll() const {
  NamedTensors tensors;
  for (const TensorSpec& spec : specs_) {
    TFM_ASSIGN_OR_RETURN(Tensor tensor, Read(spec.name));
    tensors.emplace_back(spec.name, std::move(tensor));
  }
  return tensors;
}

absl::StatusOr<SafetensorsWriter> SafetensorsWriter::Create(const std::string& path,
                                                            std::vector<TensorSpec> specs,
                                                            const SafetensorsMetadata& metadata) {
  std::set<std::string> names;
  for (const TensorSpec& spec : specs) {
    if (spec.name == kMetadataKey || !names.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor name \"", spec.name, "\" is reserved or repeated"));
    }
    TFM_RETURN_IF_ERROR(ValidateShape(spec.shape));
  }
  TFM_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(path));
  TFM_RETURN_IF_ERROR(file.Append(EncodeHeader(specs, metadata)));
  return SafetensorsWriter(std::move(file), std::move(specs));
}

absl::Status SafetensorsWriter::Append(const Tensor& tensor) {
  if (appended_ == specs_.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(file_.path(), ": more tensors appended than announced"));
  }
  const TensorSpec& spec = specs_[appended_];
  if (tensor.dtype() != spec.dtype || tensor.shape() != spec.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_.path(), ": tensor \"", spec.name, "\" was announced as ",
                     DTypeName(spec.dtype), ShapeToString(spec.shape), " but is ",
                     DTypeName(tensor.dtype()), ShapeToString(tensor.shape())));
  }
  // A model training on a GPU is written one tensor at a time through a
  // host copy.
  Tensor host = tensor;
  if (!tensor.device().is_cpu()) {
    absl::StatusOr<Tensor> copied = CopyToDevice(tensor, Device::Cpu());
    if (!copied.ok()) {
      return absl::Status(copied.status().code(),
                          absl::StrCat(file_.path(), ": tensor \"", spec.name, "\" on ",
                                       tensor.device().ToString(), ": ",
                                       copied.status().message()));
    }
    host = *std::move(copied);
  }
  TFM_RETURN_IF_ERROR(file_.Append(
      absl::string_view(static_cast<const char*>(host.raw_data()), host.nbytes())));
  ++appended_;
  return absl::OkStatus();
}

absl::Status SafetensorsWriter::Commit() {
  if (appended_ != specs_.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(file_.path(), ": ", appended_, " of ", specs_.size(), " tensors appended"));
  }
  return file_.Commit();
}

absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                              const SafetensorsMetadata& metadata) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, tensor] : tensors)
    specs.push_back({name, tensor.dtype(), tensor.shape()});
  TFM_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                       SafetensorsWriter::Create(path, std::move(specs), metadata));
  for (const auto& named : tensors) TFM_RETURN_IF_ERROR(writer.Append(named.second));
  return writer.Commit();
}

absl::StatusOr<NamedTensors> ReadSafetensors(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(SafetensorsReader reader, SafetensorsReader::Open(path));
  return reader.ReadAll();
}

}  // namespace tfm
