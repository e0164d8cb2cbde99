// Installs the caching allocator for CUDA devices (linked only with CUDA).
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/allocator.h"
#include "core/caching_allocator.h"
#include "core/cuda/runtime.h"

namespace tfm {
namespace {

class CudaMemory final : public SystemMemory {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  absl::StatusOr<void*> Malloc(size_t bytes) override { return cuda::Malloc(device_, bytes); }
  void Free(void* ptr) override { cuda::Free(device_, ptr); }
  bool MayRelease() override { return !cuda::CaptureUnderWay(); }

 private:
  int device_;
};

const bool kRegistered = [] {
  absl::Status status = RegisterAllocatorFactory(
      DeviceType::kCUDA, [](int index) -> absl::StatusOr<std::unique_ptr<Allocator>> {
        const int count = cuda::DeviceCount();
        if (index < 0 || index >= count) {
          return absl::FailedPreconditionError(
              absl::StrCat("no GPU cuda:", index, " (", count, " visible)"));
        }
        return std::make_unique<CachingAllocator>(Device::Cuda(index),
                                                  std::make_unique<CudaMemory>(index));
      });
  return status.ok();
}();

}  // namespace
}  // namespace tfm
