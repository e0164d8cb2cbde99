#include "core/config/device_setting.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/runtime.h"

namespace tfm {

bool IsAutoDevice(absl::string_view text) { return absl::AsciiStrToLower(text) == kAutoDevice; }

absl::Status CheckDeviceSyntax(absl::string_view text) {
  if (IsAutoDevice(text)) return absl::OkStatus();
  absl::StatusOr<Device> device = Device::Parse(text);
  if (!device.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid device '", text, "'; expected auto, cpu, cuda or cuda:N"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Device> ResolveDevice(absl::string_view text) {
  const int gpus = cuda::DeviceCount();
  if (IsAutoDevice(text)) return gpus > 0 ? Device::Cuda(0) : Device::Cpu();
  if (absl::Status syntax = CheckDeviceSyntax(text); !syntax.ok()) return syntax;
  const Device device = *Device::Parse(text);
  if (device.is_cpu() || device.index < gpus) return device;
  if (!cuda::BuiltWithCuda()) {
    return absl::FailedPreconditionError(
        absl::StrCat(device.ToString(), " but this binary was built without CUDA (no nvcc found)"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      device.ToString(), " but this machine has ",
      gpus == 0 ? "no GPU" : absl::StrCat(gpus, " GPU(s), cuda:0"),
      gpus > 1 ? absl::StrCat(" to cuda:", gpus - 1) : ""));
}

std::string DescribeDevice(const Device& device, absl::string_view field,
                           absl::string_view setting) {
  std::string text = device.ToString();
  if (device.is_cuda()) {
    absl::StatusOr<std::string> name = cuda::DeviceName(device.index);
    if (name.ok()) absl::StrAppend(&text, " (", *name, ")");
  }
  if (IsAutoDevice(setting)) absl::StrAppend(&text, ", chosen by ", field, " auto");
  return text;
}

}  // namespace tfm
