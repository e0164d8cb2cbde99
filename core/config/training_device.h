// train.device and --device: where a run trains. "cpu", "cuda" (= cuda:0),
// "cuda:N", or "auto": the first GPU when this process sees one, else the
// CPU. Resolved once, at the start of a run, so that a missing GPU is an
// error before a vocabulary is trained or a file is written.
#ifndef TFM_CORE_CONFIG_TRAINING_DEVICE_H_
#define TFM_CORE_CONFIG_TRAINING_DEVICE_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"

namespace tfm {

inline constexpr char kAutoDevice[] = "auto";

// True for "auto" (in any case).
bool IsAutoDevice(absl::string_view text);

// Whether `text` names a training device at all (any machine: a config for a
// GPU machine validates on a laptop); InvalidArgument lists the choices.
absl::Status CheckTrainingDeviceSyntax(absl::string_view text);

// The device `text` names on this machine. A GPU that this binary (built
// without CUDA) or this machine lacks is FailedPrecondition saying which
// GPUs there are.
absl::StatusOr<Device> ResolveTrainingDevice(absl::string_view text);

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_TRAINING_DEVICE_H_
