#include "runtime/train/checkpoint.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "core/config/config_upgrades.h"
#include "core/config/text_proto_errors.h"
#include "core/check.h"
#include "core/data/crc32c.h"
#include "core/data/file_io.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "runtime/train/file_writers.h"
#include "google/protobuf/text_format.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

constexpr int kFormatVersion = 1;
constexpr char kManifestCrcField[] = "manifest_crc32c: ";
// The files without which a checkpoint can neither resume nor decode.
constexpr const char* kRequiredFiles[] = {kModelFile, kStateFile, kConfigFile, kVocabularyFile};

// "a/b/" and "a/./b" -> "a/b", so the directory's name is its last part.
fs::path NormalDirectory(const std::string& dir) {
  fs::path path = fs::path(dir).lexically_normal();
  return path.filename().empty() ? path.parent_path() : path;
}

fs::path ParentOf(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

absl::Status RemoveTree(const std::string& path) {
  std::error_code error;
  fs::remove_all(path, error);
  if (error)
    return absl::InternalError(absl::StrCat("cannot remove ", path, ": ", error.message()));
  return absl::OkStatus();
}

absl::Status Rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    return PosixError(absl::StrCat("cannot rename ", from, " to"), to);
  }
  return absl::OkStatus();
}

// `text`, read from `path`, as a Message; an error names the file, line,
// column and what was wrong.
template <typename Message>
absl::StatusOr<Message> ParseTextProto(const std::string& text, const std::string& path) {
  Message message;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &message) || errors.has_error()) {
    return absl::DataLossError(absl::StrCat(errors.has_error() ? errors.Describe(path) : path,
                                            " (not a valid ", Message::descriptor()->full_name(),
                                            " text proto)"));
  }
  return message;
}

template <typename Message>
absl::StatusOr<Message> ReadTextProto(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  return ParseTextProto<Message>(text, path);
}

std::string ToText(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(message, &text);
  return text;
}

// The manifest text with its own checksum as the last line.
std::string SealManifest(const train::Manifest& manifest) {
  const std::string text = ToText(manifest);
  return absl::StrCat(text, kManifestCrcField, Crc32c(text), "\n");
}

absl::StatusOr<train::Manifest> ReadSealedManifest(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (absl::IsNotFound(text.status())) {
    return absl::DataLossError(
        absl::StrCat(path, " is missing: the checkpoint is incomplete (interrupted save?)"));
  }
  if (!text.ok()) return text.status();
  const size_t seal = text->rfind(kManifestCrcField);
  uint32_t stored = 0;
  if (seal == std::string::npos ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(
                            absl::string_view(*text).substr(seal + strlen(kManifestCrcField))),
                        &stored)) {
    return absl::DataLossError(absl::StrCat(path, ": no checksum line (truncated?)"));
  }
  const uint32_t computed = Crc32c(absl::string_view(*text).substr(0, seal));
  if (computed != stored) {
    return absl::DataLossError(absl::StrCat(path, ": checksum ", computed,
                                            " does not match its recorded ", stored, " (corrupt)"));
  }
  TFM_ASSIGN_OR_RETURN(train::Manifest manifest, ParseTextProto<train::Manifest>(*text, path));
  if (manifest.format_version() > kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint format ", manifest.format_version(),
                     " is newer than this build reads (", kFormatVersion, ")"));
  }
  return manifest;
}

}  // namespace

std::string CheckpointDirName(int64_t update) { return absl::StrFormat("checkpoint_%09d", update); }

absl::StatusOr<CheckpointWriter> CheckpointWriter::Create(const std::string& dir, int64_t update) {
  if (update < 0) return absl::InvalidArgumentError(absl::StrCat("negative update ", update));
  const fs::path final_dir = NormalDirectory(dir);
  const fs::path parent = ParentOf(final_dir);
  std::error_code error;
  fs::create_directories(parent, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", parent.string(), ": ", error.message()));
  }
  // Hidden and tagged with the process id: listings skip it, two runs
  // sharing a work directory do not write into each other's, and pruning
  // knows whose crash left it (checkpoint_directory.h).
  std::string temp =
      (parent / absl::StrCat(".", final_dir.filename().string(), ".tmp.", getpid())).string();
  TFM_RETURN_IF_ERROR(RemoveTree(temp));  // Left by an earlier crash of this pid.
  if (mkdir(temp.c_str(), 0755) != 0) return PosixError("cannot create", temp);
  return CheckpointWriter(final_dir.string(), std::move(temp), update);
}

CheckpointWriter::CheckpointWriter(CheckpointWriter&& other) noexcept
    : final_dir_(std::move(other.final_dir_)),
      temp_dir_(std::exchange(other.temp_dir_, "")),
      update_(other.update_),
      quantization_(std::move(other.quantization_)) {}

CheckpointWriter::~CheckpointWriter() {
  if (!temp_dir_.empty()) RemoveTree(temp_dir_).IgnoreError();  // Best effort cleanup.
}

std::string CheckpointWriter::PathOf(absl::string_view name) const {
  TFM_CHECK(!temp_dir_.empty(), "checkpoint already committed");
  return JoinPath(temp_dir_, name);
}

absl::Status CheckpointWriter::AddFile(absl::string_view name, absl::string_view contents) {
  TFM_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Create(PathOf(name)));
  TFM_RETURN_IF_ERROR(file.Append(contents));
  return file.Commit();
}

absl::Status CheckpointWriter::AddDescription(const train::TrainingState& state,
                                              const config::TaskConfig& config,
                                              absl::string_view vocabulary) {
  TFM_RETURN_IF_ERROR(AddFile(kStateFile, ToText(state)));
  TFM_RETURN_IF_ERROR(AddFile(kConfigFile, ToText(config)));
  return AddFile(kVocabularyFile, vocabulary);
}

absl::Status CheckpointWriter::AddTaskFiles(const TaskFiles& files) {
  for (const auto& [name, contents] : files) {
    if (!absl::StartsWith(name, kTaskFilePrefix) || name.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task file name '", name, "': it must start with '", kTaskFilePrefix,
          "' and hold no '/'"));
    }
    TFM_RETURN_IF_ERROR(AddFile(name, contents));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CheckpointWriter::Commit() {
  TFM_CHECK(!temp_dir_.empty(), "checkpoint already committed");
  train::Manifest manifest;
  manifest.set_format_version(kFormatVersion);
  manifest.set_update(update_);
  if (!quantization_.empty()) manifest.set_quantization(quantization_);
  std::set<std::string> names;  // Sorted, so manifests are reproducible.
  for (const fs::directory_entry& entry : fs::directory_iterator(temp_dir_)) {
    names.insert(entry.path().filename().string());
  }
  for (const std::string& name : names) {
    const std::string path = PathOf(name);
    TFM_ASSIGN_OR_RETURN(uint32_t crc, FileCrc32c(path));
    train::Manifest::File* file = manifest.add_file();
    file->set_name(name);
    file->set_size(fs::file_size(path));
    file->set_crc32c(crc);
  }
  TFM_RETURN_IF_ERROR(AddFile(kManifestFile, SealManifest(manifest)));
  TFM_RETURN_IF_ERROR(SyncDirectory(temp_dir_));

  // rename() cannot replace a non-empty directory: move an older checkpoint
  // of the same update aside first, and delete it once the new one is in.
  const std::string replaced = absl::StrCat(temp_dir_, ".replaced");
  const bool replacing = fs::exists(final_dir_);
  if (replacing) TFM_RETURN_IF_ERROR(Rename(final_dir_, replaced));
  TFM_RETURN_IF_ERROR(Rename(temp_dir_, final_dir_));
  temp_dir_.clear();
  TFM_RETURN_IF_ERROR(SyncDirectory(ParentOf(final_dir_).string()));
  if (replacing) TFM_RETURN_IF_ERROR(RemoveTree(replaced));
  return final_dir_;
}

absl::Status WriteCheckpointTo(const std::string& dir, const Checkpoint& checkpoint) {
  TFM_ASSIGN_OR_RETURN(CheckpointWriter writer,
                       CheckpointWriter::Create(dir, checkpoint.state.update()));
  // "format": "pt" tells Hugging Face loaders these are PyTorch tensors.
  const SafetensorsMetadata metadata = {{"format", "pt"}};
  TFM_RETURN_IF_ERROR(WriteSafetensors(writer.PathOf(kModelFile), checkpoint.model, metadata));
  if (!checkpoint.optimizer.empty()) {
    TFM_RETURN_IF_ERROR(
        WriteSafetensors(writer.PathOf(kOptimizerFile), checkpoint.optimizer, metadata));
  }
  TFM_RETURN_IF_ERROR(
      writer.AddDescription(checkpoint.state, checkpoint.config, checkpoint.vocabulary));
  TFM_RETURN_IF_ERROR(writer.AddTaskFiles(checkpoint.task_files));
  writer.set_quantization(checkpoint.quantization);
  return writer.Commit().status();
}

absl::StatusOr<std::string> WriteCheckpoint(const std::string& work_dir,
                                            const Checkpoint& checkpoint) {
  const std::string dir = JoinPath(work_dir, CheckpointDirName(checkpoint.state.update()));
  TFM_RETURN_IF_ERROR(WriteCheckpointTo(dir, checkpoint));
  return dir;
}

absl::StatusOr<train::Manifest> ReadCheckpointManifest(const std::string& dir) {
  return ReadSealedManifest(JoinPath(dir, kManifestFile));
}

absl::StatusOr<train::Manifest> VerifyCheckpoint(const std::string& dir) {
  TFM_ASSIGN_OR_RETURN(train::Manifest manifest, ReadCheckpointManifest(dir));
  std::set<std::string> listed;
  for (const train::Manifest::File& file : manifest.file()) {
    const std::string path = JoinPath(dir, file.name());
    listed.insert(file.name());
    struct stat info;
    if (stat(path.c_str(), &info) != 0) {
      return absl::DataLossError(absl::StrCat(path, " is listed in the MANIFEST but missing"));
    }
    if (static_cast<uint64_t>(info.st_size) != file.size()) {
      return absl::DataLossError(absl::StrCat(path, " has ", info.st_size, " bytes, the MANIFEST ",
                                              "records ", file.size(), " (truncated or replaced)"));
    }
    TFM_ASSIGN_OR_RETURN(uint32_t crc, FileCrc32c(path));
    if (crc != file.crc32c()) {
      return absl::DataLossError(absl::StrCat(path, ": CRC-32C ", crc, " differs from the ",
                                              "MANIFEST's ", file.crc32c(), " (corrupt)"));
    }
  }
  for (const char* required : kRequiredFiles) {
    if (listed.count(required) == 0) {
      return absl::DataLossError(
          absl::StrCat(JoinPath(dir, kManifestFile), " does not list ", required));
    }
  }
  return manifest;
}

absl::Status CheckNotQuantized(const std::string& dir, absl::string_view quantization,
                               absl::string_view what) {
  if (quantization.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      dir, " holds an ", quantization, "-quantized model (its MANIFEST says so), which ",
      "only decodes: cannot ", what, " from it; use the f32 checkpoint it was quantized from"));
}

absl::StatusOr<config::TaskConfig> ReadCheckpointConfig(const std::string& dir) {
  TFM_ASSIGN_OR_RETURN(config::TaskConfig config,
                       ReadTextProto<config::TaskConfig>(JoinPath(dir, kConfigFile)));
  // Saved before a task's settings moved into its extension: as they read now.
  UpgradeTaskConfig(&config);
  return config;
}

absl::StatusOr<TaskFiles> ReadCheckpointTaskFiles(const std::string& dir,
                                                  const train::Manifest& manifest) {
  TaskFiles files;
  for (const train::Manifest::File& file : manifest.file()) {
    if (!absl::StartsWith(file.name(), kTaskFilePrefix)) continue;
    TFM_ASSIGN_OR_RETURN(files[file.name()], ReadFileToString(JoinPath(dir, file.name())));
  }
  return files;
}

absl::StatusOr<train::TrainingState> ReadCheckpointState(const std::string& dir) {
  return ReadTextProto<train::TrainingState>(JoinPath(dir, kStateFile));
}

absl::Status CheckTensorValues(const std::string& name, const Tensor& tensor,
                               const std::string& path) {
  if (tensor.dtype() != DType::kF32 || !tensor.device().is_cpu()) return absl::OkStatus();
  // Adam's second moments are running means of squares: a negative one makes
  // its sqrt NaN at the first update, which the trainer would then report as
  // divergence and blame the learning rate.
  const bool second_moment = absl::EndsWith(name, ".exp_avg_sq");
  const float* data = tensor.data<float>();
  const int64_t count = tensor.num_elements();
  int64_t bad = 0, first = -1, negative = -1;
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(data[i])) {
      if (bad++ == 0) first = i;
    } else if (second_moment && data[i] < 0 && negative < 0) {
      negative = i;
    }
  }
  if (bad > 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": tensor '", name, "' holds ", bad, " non-finite value", bad == 1 ? "" : "s",
        " (NaN or infinity; the first at element ", first, " of ", count,
        "): not a model that can decode or train on"));
  }
  if (negative >= 0) {
    return absl::DataLossError(absl::StrCat(path, ": tensor '", name, "' holds ", data[negative],
                                            " at element ", negative,
                                            ": a second moment cannot be negative"));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckValues(const NamedTensors& tensors, const std::string& path) {
  for (const auto& [name, tensor] : tensors) {
    TFM_RETURN_IF_ERROR(CheckTensorValues(name, tensor, path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& dir, CheckpointParts parts) {
  TFM_ASSIGN_OR_RETURN(train::Manifest manifest, VerifyCheckpoint(dir));
  if (parts == CheckpointParts::kAll) {
    TFM_RETURN_IF_ERROR(CheckNotQuantized(dir, manifest.quantization(), "resume training"));
  }
  Checkpoint checkpoint;
  checkpoint.quantization = manifest.quantization();
  if (parts != CheckpointParts::kDescription) {
    TFM_ASSIGN_OR_RETURN(checkpoint.model, ReadSafetensors(JoinPath(dir, kModelFile)));
    TFM_RETURN_IF_ERROR(CheckValues(checkpoint.model, JoinPath(dir, kModelFile)));
  }
  checkpoint.has_optimizer =
      std::any_of(manifest.file().begin(), manifest.file().end(),
                  [](const train::Manifest::File& file) { return file.name() == kOptimizerFile; });
  if (parts == CheckpointParts::kAll && checkpoint.has_optimizer) {
    TFM_ASSIGN_OR_RETURN(checkpoint.optimizer, ReadSafetensors(JoinPath(dir, kOptimizerFile)));
    TFM_RETURN_IF_ERROR(CheckValues(checkpoint.optimizer, JoinPath(dir, kOptimizerFile)));
  }
  TFM_ASSIGN_OR_RETURN(checkpoint.state, ReadCheckpointState(dir));
  TFM_ASSIGN_OR_RETURN(checkpoint.config, ReadCheckpointConfig(dir));
  TFM_ASSIGN_OR_RETURN(checkpoint.vocabulary, ReadFileToString(JoinPath(dir, kVocabularyFile)));
  TFM_ASSIGN_OR_RETURN(checkpoint.task_files, ReadCheckpointTaskFiles(dir, manifest));
  return checkpoint;
}

}  // namespace tfm
