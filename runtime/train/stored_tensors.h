// Where a load takes stored tensors from: a safetensors file, read one
// tensor at a time, or tensors already in memory. Loading a model (or a
// resumed optimizer) from the file this way holds the destination and one
// tensor, where reading the whole file first held every value twice: for a
// Transformer-big decoding, 0.8 GB more at start; for a resume, three times
// the model's size (weights and Adam's two moments).
#ifndef TFM_RUNTIME_TRAIN_STORED_TENSORS_H_
#define TFM_RUNTIME_TRAIN_STORED_TENSORS_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "runtime/train/safetensors.h"

namespace tfm {

class StoredTensors {
 public:
  // The file's header now (checked as SafetensorsReader::Open checks it);
  // each tensor when it is read, its values then checked by
  // CheckTensorValues (checkpoint.h): a NaN in the file is an error naming
  // it, as reading the whole file was.
  static absl::StatusOr<StoredTensors> OpenFile(const std::string& path);
  // Tensors in memory (their buffers shared, not copied), named `path` in
  // errors: e.g. a model's own tensors, or a file's read before.
  StoredTensors(NamedTensors tensors, std::string path);

  const std::string& path() const { return path_; }
  // Every tensor's name, dtype and shape, in the stored order.
  const std::vector<TensorSpec>& specs() const { return specs_; }
  // The spec of `name`, or nullptr.
  const TensorSpec* Find(absl::string_view name) const;

  // The tensor `name` on the host; NotFound names the path.
  absl::StatusOr<Tensor> Read(absl::string_view name) const;
  // The tensor `name` into `destination`, of its dtype and shape, on any
  // device: a host destination is read into directly, a device one through
  // one host tensor. On an error `destination` may hold part of the values.
  absl::Status ReadInto(absl::string_view name, Tensor destination) const;

 private:
  StoredTensors() = default;

  std::string path_;
  std::vector<TensorSpec> specs_;
  std::map<std::string, size_t, std::less<>> index_;  // Into specs_ (and in_memory_).
  std::optional<SafetensorsReader> file_;
  NamedTensors in_memory_;  // When not from a file.
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_STORED_TENSORS_H_
