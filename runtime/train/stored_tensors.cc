#include "runtime/train/stored_tensors.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "runtime/train/checkpoint.h"

namespace tfm {

absl::StatusOr<StoredTensors> StoredTensors::OpenFile(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(SafetensorsReader reader, SafetensorsReader::Open(path));
  StoredTensors stored;
  stored.path_ = path;
  stored.specs_ = reader.specs();
  for (size_t i = 0; i < stored.specs_.size(); ++i) stored.index_[stored.specs_[i].name] = i;
  stored.file_ = std::move(reader);
  return stored;
}

StoredTensors::StoredTensors(NamedTensors tensors, std::string path)
    : path_(std::move(path)), in_memory_(std::move(tensors)) {
  for (size_t i = 0; i < in_memory_.size(); ++i) {
    const auto& [name, tensor] = in_memory_[i];
    specs_.push_back({name, tensor.dtype(), tensor.shape()});
    index_[name] = i;
  }
}

const TensorSpec* StoredTensors::Find(absl::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &specs_[it->second];
}

absl::StatusOr<Tensor> StoredTensors::Read(absl::string_view name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, " has no tensor \"", name, "\""));
  }
  if (!file_) return in_memory_[it->second].second;
  TFM_ASSIGN_OR_RETURN(Tensor tensor, file_->Read(name));
  TFM_RETURN_IF_ERROR(CheckTensorValues(std::string(name), tensor, path_));
  return tensor;
}

absl::Status StoredTensors::ReadInto(absl::string_view name, Tensor destination) const {
  if (file_ && destination.device().is_cpu()) {
    TFM_RETURN_IF_ERROR(file_->ReadInto(name, destination));
    return CheckTensorValues(std::string(name), destination, path_);
  }
  TFM_ASSIGN_OR_RETURN(const Tensor stored, Read(name));
  return CopyInto(stored, destination);
}

}  // namespace tfm
