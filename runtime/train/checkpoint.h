// Checkpoints: one directory per save, everything needed to resume training
// or to decode.
//
//   <work_dir>/checkpoint_000012345/
//     model.safetensors      weights by state_dict name (PyTorch reads it)
//     optimizer.safetensors  optimizer state, e.g. Adam's moments (absent in
//                            averaged checkpoints, which cannot resume)
//     state.pbtxt            train.TrainingState: update, epoch, data
//                            position, RNG state, metrics
//     config.pbtxt           the fully resolved config.TaskConfig
//     vocabulary.model       the SentencePiece model, byte for byte
//     MANIFEST               size and CRC-32C of each file above; written last
//
// Why a directory of standard files rather than one archive: model.safetensors
// opens directly in PyTorch and converters; decoding reads only the model,
// config and vocabulary; averaging streams one model file per checkpoint; and
// a checksum per file names the damaged one. The directory is built under a
// temporary name, every file and the directory flushed to disk, then renamed
// into place, so a crash leaves either the old set or the new checkpoint,
// never a half-written one.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"
#include "runtime/train/checkpoint.pb.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/task_files.h"

namespace tfm {

inline constexpr char kModelFile[] = "model.safetensors";
inline constexpr char kOptimizerFile[] = "optimizer.safetensors";
inline constexpr char kStateFile[] = "state.pbtxt";
inline constexpr char kConfigFile[] = "config.pbtxt";
inline constexpr char kVocabularyFile[] = "vocabulary.model";
inline constexpr char kManifestFile[] = "MANIFEST";

struct Checkpoint {
  NamedTensors model;
  NamedTensors optimizer;  // Empty: no optimizer file (averaged checkpoints).
  train::TrainingState state;
  config::TaskConfig config;
  std::string vocabulary;  // The SentencePiece model file's bytes.
  TaskFiles task_files;  // task_files.h
  // The MANIFEST's quantization: "int8" for a quantized model (its model
  // tensors as tasks/common/quantized_model.h lays them out), else empty.
  std::string quantization;
  // Whether the MANIFEST lists an optimizer file, read into `optimizer` by
  // CheckpointParts::kAll alone.
  bool has_optimizer = false;
};

// "checkpoint_000012345": zero-padded so names sort by update.
std::string CheckpointDirName(int64_t update);

// Builds the checkpoint directory `dir` under a temporary name beside it.
// Files go in with AddFile, or are streamed by the caller to PathOf(name);
// Commit writes the MANIFEST and renames the directory into place
// (replacing an older one of that name). Without Commit the temporary
// directory is removed.
class CheckpointWriter {
 public:
  // `update` is recorded in the MANIFEST.
  static absl::StatusOr<CheckpointWriter> Create(const std::string& dir, int64_t update);
  CheckpointWriter(CheckpointWriter&& other) noexcept;
  CheckpointWriter& operator=(CheckpointWriter&&) = delete;
  ~CheckpointWriter();

  // Where a file of the checkpoint is written before Commit.
  std::string PathOf(absl::string_view name) const;
  absl::Status AddFile(absl::string_view name, absl::string_view contents);
  // The state, config and vocabulary files.
  absl::Status AddDescription(const train::TrainingState& state, const config::TaskConfig& config,
                              absl::string_view vocabulary);
  // Each of `files`; a name without kTaskFilePrefix, or with a '/', is
  // InvalidArgument.
  absl::Status AddTaskFiles(const TaskFiles& files);
  // Recorded in the MANIFEST (Checkpoint::quantization).
  void set_quantization(std::string quantization) { quantization_ = std::move(quantization); }
  // Returns the final directory.
  absl::StatusOr<std::string> Commit();

 private:
  CheckpointWriter(std::string final_dir, std::string temp_dir, int64_t update)
      : final_dir_(std::move(final_dir)), temp_dir_(std::move(temp_dir)), update_(update) {}

  std::string final_dir_;
  std::string temp_dir_;  // Empty once committed or moved from.
  int64_t update_;
  std::string quantization_;
};

// Writes work_dir/CheckpointDirName(state.update())/; returns its path.
absl::StatusOr<std::string> WriteCheckpoint(const std::string& work_dir,
                                            const Checkpoint& checkpoint);
// The same at any directory path (e.g. an exported or averaged model).
absl::Status WriteCheckpointTo(const std::string& dir, const Checkpoint& checkpoint);

// The MANIFEST of the checkpoint in `dir`, its own checksum checked but not
// the files it lists: what a caller needs to know the kind of checkpoint
// (e.g. quantized) before the load, which verifies the files, reads it.
absl::StatusOr<train::Manifest> ReadCheckpointManifest(const std::string& dir);

// Checks the MANIFEST's own checksum, then each listed file's size and
// checksum, and that the files a checkpoint needs are listed. DataLoss
// errors name the file and what is wrong (missing, size, checksum).
absl::StatusOr<train::Manifest> VerifyCheckpoint(const std::string& dir);

// FailedPrecondition when `quantization` (the MANIFEST's, of the
// checkpoint in `dir`) marks a quantized model, which decodes only: `what`
// (e.g. "resume training", "average") names what was asked of it.
absl::Status CheckNotQuantized(const std::string& dir, absl::string_view quantization,
                               absl::string_view what);

enum class CheckpointParts {
  kAll,       // To resume training.
  kDecoding,  // Model, config, state and vocabulary; the optimizer is skipped.
  // Config, state, vocabulary and task files, no tensors: a load that sets
  // a model's parameters reads them from the verified files with
  // StoredTensors::OpenFile, one at a time, not the whole model twice.
  kDescription,
};

// OK, or DataLoss naming `path`, the tensor, how many of its values are NaN
// or infinite and the first: a weight or moment like that would fail nowhere
// visible (attention absorbs some NaNs: a model decodes plausible but wrong
// translations, slowly). The trainer never saves after a non-finite update,
// so such a file was edited or written by another program. An Adam second
// moment (".exp_avg_sq") must also not be negative. One pass over the
// values; checks f32 host tensors, others pass.
absl::Status CheckTensorValues(const std::string& name, const Tensor& tensor,
                               const std::string& path);

// Verifies, then reads the checkpoint in `dir`; kAll of a quantized model is
// CheckNotQuantized's error.
absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& dir,
                                          CheckpointParts parts = CheckpointParts::kAll);

// The text files of a checkpoint alone (no tensors), e.g. to check a
// checkpoint against the run's config before loading weights. `dir` must be
// verified.
// Configs saved before a task's settings moved into its extension come
// back upgraded (core/config/config_upgrades.h), as every config is read.
absl::StatusOr<config::TaskConfig> ReadCheckpointConfig(const std::string& dir);
// The task files `manifest` (the verified checkpoint's, in `dir`) lists.
absl::StatusOr<TaskFiles> ReadCheckpointTaskFiles(const std::string& dir,
                                                  const train::Manifest& manifest);
absl::StatusOr<train::TrainingState> ReadCheckpointState(const std::string& dir);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_H_
