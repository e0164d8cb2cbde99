#include "core/allocator.h"

#include <cstdlib>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/caching_allocator.h"

namespace tfm {
namespace {

// Aligned host memory straight from the C library.
class AlignedHostMemory final : public SystemMemory {
 public:
  absl::StatusOr<void*> Malloc(size_t bytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    const size_t rounded =
        ((bytes == 0 ? 1 : bytes) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    if (ptr == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("CPU allocation of ", bytes, " bytes failed"));
    }
    return ptr;
  }
  void Free(void* ptr) override { std::free(ptr); }
};

// Host blocks from 1 MiB up are cached: glibc returns large blocks to the
// kernel with munmap, and mapping them again costs a page fault per 4 KiB on
// every op call (a 32 MiB activation: ~8k faults). Smaller blocks are left to
// malloc. TFM_CPU_CACHE_MB caps the cache (default 2048).
CachingAllocator::Options CpuCacheOptions() {
  CachingAllocator::Options options;
  options.min_cached_bytes = size_t{1} << 20;
  int64_t megabytes = 2048;
  const char* env = std::getenv("TFM_CPU_CACHE_MB");
  if (env != nullptr && absl::SimpleAtoi(env, &megabytes) && megabytes >= 0) {
    options.max_cached_bytes = static_cast<size_t>(megabytes) << 20;
  } else {
    options.max_cached_bytes = size_t{2048} << 20;
  }
  return options;
}

struct AllocatorTable {
  absl::Mutex mu;
  std::map<DeviceType, AllocatorFactory> factories ABSL_GUARDED_BY(mu);
  std::map<std::pair<DeviceType, int>, std::unique_ptr<Allocator>> allocators
      ABSL_GUARDED_BY(mu);
};

AllocatorTable& Table() {
  static auto* table = new AllocatorTable();  // Never destroyed: see style guide.
  return *table;
}

}  // namespace

Allocator* CpuAllocator() {
  static auto* allocator = new CachingAllocator(
      Device::Cpu(), std::make_unique<AlignedHostMemory>(), CpuCacheOptions());
  return allocator;
}

absl::StatusOr<Allocator*> AllocatorFor(const Device& device) {
  if (device.is_cpu()) return CpuAllocator();
  AllocatorTable& table = Table();
  absl::MutexLock lock(&table.mu);
  auto key = std::make_pair(device.type, device.index);
  auto existing = table.allocators.find(key);
  if (existing != table.allocators.end()) return existing->second.get();
  auto factory = table.factories.find(device.type);
  if (factory == table.factories.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no allocator for device ", device.ToString(),
                     ": this binary was built without ",
                     DeviceTypeName(device.type), " support"));
  }
  absl::StatusOr<std::unique_ptr<Allocator>> created = factory->second(device.index);
  if (!created.ok()) return created.status();
  Allocator* raw = created->get();
  table.allocators[key] = std::move(created).value();
  return raw;
}

absl::Status RegisterAllocatorFactory(DeviceType type, AllocatorFactory factory) {
  AllocatorTable& table = Table();
  absl::MutexLock lock(&table.mu);
  if (!table.factories.emplace(type, std::move(factory)).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "an allocator factory for ", DeviceTypeName(type), " is already registered"));
  }
  return absl::OkStatus();
}

}  // namespace tfm
