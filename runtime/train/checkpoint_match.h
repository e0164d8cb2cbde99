// Whether a checkpoint fits the run that loads it. Each error names the
// checkpoint's file and says what differs, so a user resuming with an edited
// config or a retrained tokenizer sees why, instead of garbage or a crash.
#ifndef TFM_RUNTIME_TRAIN_CHECKPOINT_MATCH_H_
#define TFM_RUNTIME_TRAIN_CHECKPOINT_MATCH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/config/task_config.pb.h"
#include "core/trainable_model.h"
#include "runtime/train/safetensors.h"
#include "runtime/train/stored_tensors.h"

namespace tfm {

// The sections that fix what the weights mean, `model` and
// `data.tokenizer` (less its model_path, a location), must be equal;
// others (steps, logging, data paths) may change between runs.
// FailedPrecondition listing each differing field as checkpoint -> run.
absl::Status CheckConfigMatches(const config::TaskConfig& checkpoint,
                                const std::string& checkpoint_path, const config::TaskConfig& run);

// The SentencePiece models must be identical. FailedPrecondition saying how
// they differ: number of pieces, the first differing piece, or other
// settings.
absl::Status CheckVocabularyMatches(absl::string_view checkpoint,
                                    const std::string& checkpoint_path, absl::string_view run,
                                    const std::string& run_path);

// `model`'s parameters by name, each sharing its parameter's buffer: what a
// checkpoint stores, and the destination a load fills in place.
NamedTensors ParameterTensors(TrainableModel& model);

// Sets each tensor of `destination` (on any device; e.g. handles to a
// model's parameters, which share their buffers) from the tensor of the same
// name in `source`. Names missing on either side, or a different dtype or
// shape, are FailedPrecondition naming the source's path and the tensors,
// found before any value is copied. A file's tensors are read one at a time,
// straight into host destinations.
absl::Status AssignTensors(const StoredTensors& source, NamedTensors* destination);
// The same from tensors in memory, named `source_path` in errors.
absl::Status AssignTensors(const NamedTensors& source, const std::string& source_path,
                           NamedTensors* destination);

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_CHECKPOINT_MATCH_H_
