#include "tasks/common/quantized_model.h"

#include <filesystem>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "ops/quantized_linear/int8_weight_rows.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_match.h"
#include "tasks/common/trained_model.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

// Whether `dir`'s MANIFEST marks an int8 model directory. Its files are
// not read here: the load that follows verifies them (checksumming the
// weights twice would double a large model's start-up reads).
bool IsInt8ModelDirectory(const std::string& dir) {
  absl::StatusOr<train::Manifest> manifest = ReadCheckpointManifest(dir);
  return manifest.ok() && manifest->quantization() == kInt8Quantization;
}

}  // namespace

bool IsInt8Parameter(const std::string& name, const Tensor& value) {
  return value.dtype() == DType::kF32 && value.rank() == 2 &&
         !absl::StrContains(name, "embed_positions");
}

absl::StatusOr<NamedTensors> Int8ModelTensors(const NamedTensors& parameters) {
  NamedTensors stored;
  for (const auto& [name, value] : parameters) {
    if (!IsInt8Parameter(name, value)) {
      stored.emplace_back(name, value);
      continue;
    }
    absl::StatusOr<Int8Rows> rows = QuantizeWeightRows(value);
    if (!rows.ok()) {
      return absl::Status(rows.status().code(),
                          absl::StrCat("quantizing \"", name, "\": ", rows.status().message()));
    }
    stored.emplace_back(name, rows->values);
    stored.emplace_back(absl::StrCat(name, kScalesSuffix), rows->scales);
  }
  return stored;
}

absl::Status AssignInt8ModelTensors(const StoredTensors& stored, NamedTensors* parameters,
                                    const std::function<bool(const std::string&)>& kept_as_rows,
                                    Int8RowsByName* rows_of) {
  const std::string& path = stored.path();
  const auto find = [&](const std::string& name) -> absl::StatusOr<const TensorSpec*> {
    const TensorSpec* spec = stored.Find(name);
    if (spec == nullptr) {
      return absl::DataLossError(
          absl::StrCat(path, " has no tensor \"", name, "\" (an int8 model needs it)"));
    }
    return spec;
  };
  // Every name, and the kept f32 tensors' shapes, before any value is read:
  // a file of another model fails whole, not halfway through the load.
  size_t used = 0;
  for (const auto& [name, parameter] : *parameters) {
    TFM_ASSIGN_OR_RETURN(const TensorSpec* spec, find(name));
    ++used;
    if (IsInt8Parameter(name, parameter)) {
      TFM_RETURN_IF_ERROR(find(absl::StrCat(name, kScalesSuffix)).status());
      ++used;
    } else if (spec->dtype != parameter.dtype() || spec->shape != parameter.shape()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " does not fit the model: ", name, " is ", DTypeName(spec->dtype),
          ShapeToString(spec->shape), " in the file, ", DTypeName(parameter.dtype()),
          ShapeToString(parameter.shape()), " in the model"));
    }
  }
  // Every stored tensor must be one the model reads: extras mean another model.
  if (used != stored.specs().size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " holds ", stored.specs().size(), " tensors, the model's config reads ",
                     used, " of them: a model of another architecture"));
  }
  // One parameter at a time: the int8 rows and their dequantized values of
  // one matrix beside the model, never the whole model's.
  for (auto& [name, parameter] : *parameters) {
    if (!IsInt8Parameter(name, parameter)) {
      TFM_RETURN_IF_ERROR(stored.ReadInto(name, parameter));
      continue;
    }
    const std::string scales_name = absl::StrCat(name, kScalesSuffix);
    TFM_ASSIGN_OR_RETURN(const Tensor values, stored.Read(name));
    TFM_ASSIGN_OR_RETURN(const Tensor scales, stored.Read(scales_name));
    const Int8Rows rows{values, scales};
    absl::Status valid = CheckInt8Rows(rows);
    if (valid.ok() && values.shape() != parameter.shape()) {
      valid = absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(values.shape()),
                                                      ", the model's config needs ",
                                                      ShapeToString(parameter.shape())));
    }
    if (!valid.ok()) {
      return absl::DataLossError(absl::StrCat(path, ": tensor \"", name, "\" and \"", scales_name,
                                              "\": ", valid.message()));
    }
    if (rows_of != nullptr && kept_as_rows && kept_as_rows(name)) {
      (*rows_of)[name] = rows;
      continue;
    }
    TFM_ASSIGN_OR_RETURN(const Tensor dequantized, DequantizeInt8Rows(rows));
    TFM_RETURN_IF_ERROR(CopyInto(dequantized, parameter));
  }
  return absl::OkStatus();
}

bool NamesInt8Model(const std::string& model_paths) {
  for (const absl::string_view path : absl::StrSplit(model_paths, ',', absl::SkipWhitespace())) {
    absl::StatusOr<std::string> dir = ChooseCheckpoint(std::string(path), nullptr);
    if (dir.ok() && IsInt8ModelDirectory(*dir)) return true;
  }
  return false;
}

absl::Status QuantizeWeightsInPlace(Transformer& model) {
  NamedTensors parameters = ParameterTensors(model);
  TFM_ASSIGN_OR_RETURN(const NamedTensors stored, Int8ModelTensors(parameters));
  return AssignInt8ModelTensors(StoredTensors(stored, "(the model quantized at load)"),
                                &parameters);
}

absl::Status QuantizeModelDirectory(const std::string& model_path, const std::string& output,
                                    std::ostream& log) {
  if (model_path.empty() || output.empty()) {
    return absl::InvalidArgumentError(
        "quantize needs --model=DIR (a checkpoint or work directory) and --output=DIR (the int8 "
        "model directory to write)");
  }
  std::error_code error;
  if (fs::exists(output, error) && !fs::is_empty(output, error) && !IsInt8ModelDirectory(output)) {
    return absl::AlreadyExistsError(
        absl::StrCat("--output=", output,
                     " exists and is not an int8 model directory: give a new or empty one"));
  }
  TFM_ASSIGN_OR_RETURN(const std::string dir, ChooseCheckpoint(model_path, &log));
  TFM_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(dir, CheckpointParts::kDecoding));
  if (checkpoint.quantization == kInt8Quantization) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is already an int8 model: quantize the f32 checkpoint it came from"));
  }
  const std::string f32_file = absl::StrCat(dir, "/", kModelFile);
  TFM_ASSIGN_OR_RETURN(checkpoint.model, Int8ModelTensors(checkpoint.model));
  checkpoint.optimizer.clear();
  checkpoint.quantization = kInt8Quantization;
  TFM_RETURN_IF_ERROR(WriteCheckpointTo(output, checkpoint));
  // Decodes, or says why not, before the command reports success.
  TFM_RETURN_IF_ERROR(LoadTrainedModel(output, Device::Cpu(), nullptr).status());
  const auto size = [](const std::string& path) {
    std::error_code ignored;
    return static_cast<int64_t>(fs::file_size(path, ignored));
  };
  const int64_t f32_bytes = size(f32_file);
  const int64_t int8_bytes = size(absl::StrCat(output, "/", kModelFile));
  log << "quantized " << dir << " into " << output << "\n"
      << absl::StrFormat("model size on disk: f32 %d bytes, int8 %d bytes (%.2fx smaller)\n",
                         f32_bytes, int8_bytes,
                         int8_bytes > 0 ? static_cast<double>(f32_bytes) / int8_bytes : 0.0);
  return absl::OkStatus();
}

}  // namespace tfm
