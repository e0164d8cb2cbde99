// The CUDA runtime as the engine uses it, behind plain C++ declarations so
// that code compiled without CUDA headers can call it. In builds without CUDA
// (runtime_none.cc) there are zero devices and every call says so.
#ifndef TFM_CORE_CUDA_RUNTIME_H_
#define TFM_CORE_CUDA_RUNTIME_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tfm {
namespace cuda {

// True if this binary contains CUDA code (it may still find no GPU).
bool BuiltWithCuda();

// Number of usable GPUs; 0 without CUDA, without a driver or without GPUs.
int DeviceCount();

// "NVIDIA H100 80GB HBM3 (sm_90)"; an error for a bad ordinal.
absl::StatusOr<std::string> DeviceName(int device);

absl::StatusOr<void*> Malloc(int device, size_t bytes);
void Free(int device, void* ptr);

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// Copies `bytes` and waits until the copy is done.
absl::Status Memcpy(void* dst, const void* src, size_t bytes, CopyKind kind);
absl::Status Synchronize(int device);

// What a benchmark reports about a GPU and derives its peaks from.
struct DeviceInfo {
  std::string name;             // "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;   // 90 for sm_90
  int sm_count = 0;
  int max_sm_clock_mhz = 0;     // The boost clock the device reports.
  int max_memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  size_t memory_bytes = 0;
  int driver_api_version = 0;   // cudaDriverGetVersion: 13000 is CUDA 13.0.
};
absl::StatusOr<DeviceInfo> GetDeviceInfo(int device);

// Versions of the libraries linked: "CUDA runtime 13000, cuBLAS 130000, ...".
std::string LibraryVersions();

}  // namespace cuda
}  // namespace tfm

#endif  // TFM_CORE_CUDA_RUNTIME_H_
