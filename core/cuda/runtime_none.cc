// runtime.h for builds without CUDA: no devices, and calls explain why.
#include "core/cuda/runtime.h"

namespace tfm {
namespace cuda {
namespace {

absl::Status NoCuda() {
  return absl::FailedPreconditionError(
      "this binary was built without CUDA (no toolkit found, or --config=nocuda)");
}

}  // namespace

bool BuiltWithCuda() { return false; }
int DeviceCount() { return 0; }
absl::StatusOr<std::string> DeviceName(int) { return NoCuda(); }
absl::StatusOr<void*> Malloc(int, size_t) { return NoCuda(); }
void Free(int, void*) {}
absl::Status Memcpy(void*, const void*, size_t, CopyKind) { return NoCuda(); }
absl::Status CopyHostToDeviceInStreamOrder(int, void*, const void*, size_t) {
  return NoCuda();
}
absl::Status CopyDeviceToHostTogether(int, const DeviceToHostCopy*, size_t) { return NoCuda(); }
StagingStats GetStagingStats() { return {}; }
int64_t HostWaits() { return 0; }
absl::Status Synchronize(int) { return NoCuda(); }
absl::Status SetCurrentDevice(int) { return NoCuda(); }
absl::StatusOr<void*> CreateStream(int) { return NoCuda(); }
absl::Status BeginCapture(void*) { return NoCuda(); }
absl::StatusOr<void*> EndCapture(void*, bool) { return NoCuda(); }
bool CaptureUnderWay() { return false; }
absl::Status LaunchGraph(void*, void*) { return NoCuda(); }
void DestroyGraph(void*) {}
absl::StatusOr<DeviceInfo> GetDeviceInfo(int) { return NoCuda(); }
std::string LibraryVersions() { return "built without CUDA"; }
bool CublasLtLoaded() { return false; }

}  // namespace cuda
}  // namespace tfm
