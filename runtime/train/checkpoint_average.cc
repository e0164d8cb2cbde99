#include "runtime/train/checkpoint_average.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/check.h"
#include "core/data/file_io.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_match.h"
#include "runtime/train/safetensors.h"

namespace tfm {
namespace {

bool IsFloating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

template <typename T>
void AddTo(const Tensor& tensor, std::vector<double>* sum) {
  const T* values = tensor.data<T>();
  for (size_t i = 0; i < sum->size(); ++i) (*sum)[i] += static_cast<float>(values[i]);
}

template <typename T>
void StoreMean(const std::vector<double>& sum, double count, Tensor* out) {
  T* values = out->data<T>();
  for (size_t i = 0; i < sum.size(); ++i) values[i] = T(static_cast<float>(sum[i] / count));
}

void Accumulate(const Tensor& tensor, std::vector<double>* sum) {
  switch (tensor.dtype()) {
    case DType::kF32:
      return AddTo<float>(tensor, sum);
    case DType::kF16:
      return AddTo<Half>(tensor, sum);
    case DType::kBF16:
      return AddTo<BFloat16>(tensor, sum);
    default:
      TFM_CHECK(false, "only floating-point tensors are averaged");
  }
}

void StoreMean(const std::vector<double>& sum, double count, Tensor* out) {
  switch (out->dtype()) {
    case DType::kF32:
      return StoreMean<float>(sum, count, out);
    case DType::kF16:
      return StoreMean<Half>(sum, count, out);
    case DType::kBF16:
      return StoreMean<BFloat16>(sum, count, out);
    default:
      TFM_CHECK(false, "only floating-point tensors are averaged");
  }
}

absl::Status CheckSameTensors(const SafetensorsReader& reference, const SafetensorsReader& other) {
  auto describe = [](const TensorSpec& spec) {
    return absl::StrCat(DTypeName(spec.dtype), ShapeToString(spec.shape));
  };
  for (const TensorSpec& spec : reference.specs()) {
    const auto it = std::find_if(other.specs().begin(), other.specs().end(),
                                 [&spec](const TensorSpec& s) { return s.name == spec.name; });
    if (it == other.specs().end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          other.path(), " has no tensor \"", spec.name, "\", which ", reference.path(), " has"));
    }
    if (it->dtype != spec.dtype || it->shape != spec.shape) {
      return absl::FailedPreconditionError(absl::StrCat(other.path(), ": tensor \"", spec.name,
                                                        "\" is ", describe(*it), ", but ",
                                                        describe(spec), " in ", reference.path()));
    }
  }
  if (other.specs().size() != reference.specs().size()) {
    return absl::FailedPreconditionError(absl::StrCat(other.path(), " has ", other.specs().size(),
                                                      " tensors, ", reference.path(), " has ",
                                                      reference.specs().size()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AverageCheckpoints(const std::vector<std::string>& paths, const std::string& out_dir) {
  if (paths.empty()) return absl::InvalidArgumentError("no checkpoints to average");
  // The newest (last) checkpoint's config, vocabulary and state describe
  // the result; every other must agree with them.
  const std::string& newest = paths.back();
  TFM_ASSIGN_OR_RETURN(const train::Manifest newest_manifest, VerifyCheckpoint(newest));
  TFM_RETURN_IF_ERROR(CheckNotQuantized(newest, newest_manifest.quantization(), "average"));
  TFM_ASSIGN_OR_RETURN(const TaskFiles task_files,
                       ReadCheckpointTaskFiles(newest, newest_manifest));
  TFM_ASSIGN_OR_RETURN(config::TaskConfig config, ReadCheckpointConfig(newest));
  TFM_ASSIGN_OR_RETURN(train::TrainingState state, ReadCheckpointState(newest));
  TFM_ASSIGN_OR_RETURN(std::string vocabulary, ReadFileToString(JoinPath(newest, kVocabularyFile)));
  TFM_ASSIGN_OR_RETURN(SafetensorsReader reference,
                       SafetensorsReader::Open(JoinPath(newest, kModelFile)));
  std::vector<SafetensorsReader> readers;
  for (const std::string& path : paths) {
    if (path != newest) {
      TFM_ASSIGN_OR_RETURN(const train::Manifest manifest, VerifyCheckpoint(path));
      TFM_RETURN_IF_ERROR(CheckNotQuantized(path, manifest.quantization(), "average"));
      TFM_ASSIGN_OR_RETURN(config::TaskConfig other_config, ReadCheckpointConfig(path));
      TFM_RETURN_IF_ERROR(CheckConfigMatches(other_config, JoinPath(path, kConfigFile), config));
      TFM_ASSIGN_OR_RETURN(std::string other_vocabulary,
                           ReadFileToString(JoinPath(path, kVocabularyFile)));
      TFM_RETURN_IF_ERROR(CheckVocabularyMatches(other_vocabulary, JoinPath(path, kVocabularyFile),
                                                 vocabulary, JoinPath(newest, kVocabularyFile)));
    }
    TFM_ASSIGN_OR_RETURN(SafetensorsReader reader,
                         SafetensorsReader::Open(JoinPath(path, kModelFile)));
    TFM_RETURN_IF_ERROR(CheckSameTensors(reference, reader));
    readers.push_back(std::move(reader));
  }

  TFM_ASSIGN_OR_RETURN(CheckpointWriter writer, CheckpointWriter::Create(out_dir, state.update()));
  TFM_ASSIGN_OR_RETURN(SafetensorsWriter model,
                       SafetensorsWriter::Create(writer.PathOf(kModelFile), reference.specs(),
                                                 reference.metadata()));
  for (const TensorSpec& spec : reference.specs()) {
    TFM_ASSIGN_OR_RETURN(Tensor first, readers.front().Read(spec.name));
    if (!IsFloating(spec.dtype)) {
      for (size_t i = 1; i < readers.size(); ++i) {
        TFM_ASSIGN_OR_RETURN(Tensor other, readers[i].Read(spec.name));
        if (std::memcmp(first.raw_data(), other.raw_data(), first.nbytes()) != 0) {
          return absl::FailedPreconditionError(absl::StrCat(
              "integer tensor \"", spec.name, "\" differs between ", readers.front().path(),
              " and ", readers[i].path(), "; its mean would not be meaningful"));
        }
      }
      TFM_RETURN_IF_ERROR(model.Append(first));
      continue;
    }
    // A NaN in one member would make the average's tensor NaN, and the
    // average replaces the last good one: refused, naming the member.
    TFM_RETURN_IF_ERROR(CheckTensorValues(spec.name, first, readers.front().path()));
    std::vector<double> sum(first.num_elements(), 0.0);
    Accumulate(first, &sum);
    for (size_t i = 1; i < readers.size(); ++i) {
      TFM_ASSIGN_OR_RETURN(Tensor other, readers[i].Read(spec.name));
      TFM_RETURN_IF_ERROR(CheckTensorValues(spec.name, other, readers[i].path()));
      Accumulate(other, &sum);
    }
    StoreMean(sum, static_cast<double>(readers.size()), &first);  // Reuses its storage.
    TFM_RETURN_IF_ERROR(model.Append(first));
  }
  TFM_RETURN_IF_ERROR(model.Commit());

  state.clear_averaged_from();
  for (const std::string& path : paths) state.add_averaged_from(path);
  TFM_RETURN_IF_ERROR(writer.AddDescription(state, config, vocabulary));
  TFM_RETURN_IF_ERROR(writer.AddTaskFiles(task_files));
  return writer.Commit().status();
}

}  // namespace tfm
