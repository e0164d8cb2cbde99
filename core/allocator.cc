#include "core/allocator.h"

#include <cstdlib>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace tfm {
namespace {

class AlignedCpuAllocator final : public Allocator {
 public:
  absl::StatusOr<void*> Allocate(size_t bytes, StreamHandle) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    const size_t rounded =
        ((bytes == 0 ? 1 : bytes) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    if (ptr == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("CPU allocation of ", bytes, " bytes failed"));
    }
    absl::MutexLock lock(&mu_);
    sizes_[ptr] = rounded;
    stats_.bytes_in_use += rounded;
    stats_.bytes_reserved += rounded;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    ++stats_.num_system_allocs;
    return ptr;
  }

  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    {
      absl::MutexLock lock(&mu_);
      auto it = sizes_.find(ptr);
      if (it != sizes_.end()) {
        stats_.bytes_in_use -= it->second;
        stats_.bytes_reserved -= it->second;
        sizes_.erase(it);
      }
    }
    std::free(ptr);
  }

  Device device() const override { return Device::Cpu(); }

  AllocatorStats stats() const override {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<void*, size_t> sizes_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

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
  static auto* allocator = new AlignedCpuAllocator();
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
