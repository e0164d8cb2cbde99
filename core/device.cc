#include "core/device.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tfm {

absl::string_view DeviceTypeName(DeviceType type) {
  return type == DeviceType::kCPU ? "CPU" : "CUDA";
}

std::string Device::ToString() const {
  if (is_cpu()) return "cpu";
  return absl::StrCat("cuda:", index);
}

absl::StatusOr<Device> Device::Parse(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(text);
  absl::string_view rest = lower;
  if (rest == "cpu") return Cpu();
  if (absl::ConsumePrefix(&rest, "cuda")) {
    if (rest.empty()) return Cuda(0);
    int index = -1;
    if (absl::ConsumePrefix(&rest, ":") && absl::SimpleAtoi(rest, &index) &&
        index >= 0) {
      return Cuda(index);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid device '", text, "'; expected cpu, cuda or cuda:N"));
}

}  // namespace tfm
