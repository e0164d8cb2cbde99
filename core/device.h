// Where a tensor lives: the host, or one CUDA GPU.
#ifndef TFM_CORE_DEVICE_H_
#define TFM_CORE_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

enum class DeviceType : uint8_t { kCPU, kCUDA };

absl::string_view DeviceTypeName(DeviceType type);  // "CPU", "CUDA"

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // GPU ordinal; always 0 for the CPU.

  static Device Cpu() { return Device{DeviceType::kCPU, 0}; }
  static Device Cuda(int index) { return Device{DeviceType::kCUDA, index}; }

  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_cuda() const { return type == DeviceType::kCUDA; }
  std::string ToString() const;  // "cpu", "cuda:1"

  // Accepts "cpu", "cuda" (= cuda:0) and "cuda:N", case-insensitively.
  static absl::StatusOr<Device> Parse(absl::string_view text);

  friend bool operator==(const Device& a, const Device& b) {
    return a.type == b.type && a.index == b.index;
  }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

// An opaque execution stream (a cudaStream_t on CUDA; unused on the CPU).
// nullptr is the device's default stream.
using StreamHandle = void*;

}  // namespace tfm

#endif  // TFM_CORE_DEVICE_H_
