// Reading and writing the safetensors format (huggingface/safetensors), the
// weights format PyTorch, JAX and most converters read:
//   8 bytes   little-endian header length N
//   N bytes   JSON: {"__metadata__": {str: str}, name: {"dtype": "F32",
//             "shape": [..], "data_offsets": [begin, end]}, ...}, padded with
//             spaces to a multiple of 8
//   data      the tensors' little-endian bytes, back to back, offsets
//             relative to the end of the header.
// Both directions stream one tensor at a time, so averaging a big model
// holds one tensor in memory, not the model.
#ifndef TFM_RUNTIME_TRAIN_SAFETENSORS_H_
#define TFM_RUNTIME_TRAIN_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "runtime/train/file_writers.h"

namespace tfm {

// Tensors by name, in a fixed order (the state_dict order of a model).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
// Free-form string pairs stored under "__metadata__".
using SafetensorsMetadata = std::map<std::string, std::string>;

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
};

// "F32", "F16", "BF16", "I32", "I64", "I8": the format's dtype names (I8:
// the weights of an int8-quantized model, tasks/common/quantized_model.h).
absl::string_view SafetensorsDTypeName(DType dtype);

class SafetensorsReader {
 public:
  // Reads and checks the header (sizes, offsets covering the data exactly,
  // known dtypes); errors name the file and the entry at fault.
  static absl::StatusOr<SafetensorsReader> Open(const std::string& path);

  // In the order of their data in the file.
  const std::vector<TensorSpec>& specs() const { return specs_; }
  const SafetensorsMetadata& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }

  // Reads one tensor into a new host tensor; NotFound names the file.
  absl::StatusOr<Tensor> Read(absl::string_view name) const;
  // Reads one tensor straight into `destination`, a host tensor of its dtype
  // and shape (else InvalidArgument naming the file and the tensor): a load
  // into a model's parameters needs no second copy of them.
  absl::Status ReadInto(absl::string_view name, Tensor destination) const;
  // All tensors, in file order.
  absl::StatusOr<NamedTensors> ReadAll() const;

 private:
  // The index of `name` in specs_, or NotFound naming the file.
  absl::StatusOr<size_t> IndexOf(absl::string_view name) const;

  struct Extent {
    uint64_t begin;
    uint64_t end;
  };
  class File;

  std::string path_;
  std::shared_ptr<const File> file_;
  uint64_t data_start_ = 0;
  std::vector<TensorSpec> specs_;
  std::vector<Extent> extents_;  // Parallel to specs_.
  SafetensorsMetadata metadata_;
};

class SafetensorsWriter {
 public:
  // Writes the header for `specs` to a temporary file beside `path`; the
  // tensors follow with Append, in the same order. Names must be unique.
  static absl::StatusOr<SafetensorsWriter> Create(const std::string& path,
                                                  std::vector<TensorSpec> specs,
                                                  const SafetensorsMetadata& metadata = {});

  // The next tensor of the specs, of the announced dtype and shape (else
  // InvalidArgument naming it), on any device (a GPU's is copied to the
  // host first).
  absl::Status Append(const Tensor& tensor);
  // Flushes and renames the file into place; fails unless every tensor of
  // the specs was appended.
  absl::Status Commit();

 private:
  SafetensorsWriter(AtomicFileWriter file, std::vector<TensorSpec> specs)
      : file_(std::move(file)), specs_(std::move(specs)) {}

  AtomicFileWriter file_;
  std::vector<TensorSpec> specs_;
  size_t appended_ = 0;
};

// One-call forms of the above.
absl::Status WriteSafetensors(const std::string& path, const NamedTensors& tensors,
                              const SafetensorsMetadata& metadata = {});
absl::StatusOr<NamedTensors> ReadSafetensors(const std::string& path);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_SAFETENSORS_H_
