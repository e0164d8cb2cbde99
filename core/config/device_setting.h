// train.device, decode.device and --device: where a run trains or decodes.
// "cpu", "cuda" (= cuda:0), "cuda:N", or "auto": the first GPU when this
// process sees one, else the CPU. Resolved once, at the start of a command,
// so that a missing GPU is an error before a vocabulary is trained, a file
// is written or an input is read.
#ifndef TFM_CORE_CONFIG_DEVICE_SETTING_H_
#define TFM_CORE_CONFIG_DEVICE_SETTING_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device.h"

namespace tfm {

inline constexpr char kAutoDevice[] = "auto";

// True for "auto" (in any case).
bool IsAutoDevice(absl::string_view text);

// Whether `text` names a device setting at all (any machine: a config for a
// GPU machine validates on a laptop); InvalidArgument lists the choices.
absl::Status CheckDeviceSyntax(absl::string_view text);

// The device `text` names on this machine. A GPU that this binary (built
// without CUDA) or this machine lacks is FailedPrecondition saying which
// GPUs there are.
absl::StatusOr<Device> ResolveDevice(absl::string_view text);

// For the log: "cuda:0 (NVIDIA H100 80GB HBM3 (sm_90)), chosen by
// decode.device auto" (`field` names the setting that said "auto").
std::string DescribeDevice(const Device& device, absl::string_view field,
                           absl::string_view setting);

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_DEVICE_SETTING_H_
