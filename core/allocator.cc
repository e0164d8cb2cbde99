#include "core/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/caching_allocator.h"
#include "core/env_setting.h"
#include "core/environment_report.h"

namespace tfm {

void* AlignedHostAlloc(size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  const size_t rounded =
      ((bytes == 0 ? 1 : bytes) + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  return std::aligned_alloc(kCpuAlignment, rounded);
}

namespace {
std::atomic<bool> huge_pages_for_training{false};
}  // namespace

bool HostHugePagesOn() {
  // The variable, read once: 0 forces them off, 1 on, else the training's.
  static const bool forced_off = EnvIs("TFM_HUGE_PAGES", "0");
  static const bool forced_on = EnvIs("TFM_HUGE_PAGES", "1");
  if (forced_off) return false;
  return forced_on || huge_pages_for_training.load(std::memory_order_relaxed);
}

void SetHostHugePagesForTraining(bool on) {
  huge_pages_for_training.store(on, std::memory_order_relaxed);
}

void* HostBlockAlloc(size_t bytes) {
  if (bytes < kHugePageBytes || !HostHugePagesOn()) return AlignedHostAlloc(bytes);
  void* ptr = nullptr;
  if (posix_memalign(&ptr, kHugePageBytes, bytes) != 0) return nullptr;
  // Only whole huge pages: the tail past the last one stays on 4 KiB pages.
  // A refusal (a kernel without transparent huge pages) leaves small pages.
  madvise(ptr, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return ptr;
}

std::string TransparentHugePagesMode() {
  // "always [madvise] never": the bracketed word is the mode.
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(file, line)) return "unknown";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return line;
  return line.substr(open + 1, close - open - 1);
}

namespace {

// Aligned host memory straight from the C library.
class AlignedHostMemory final : public SystemMemory {
 public:
  absl::StatusOr<void*> Malloc(size_t bytes) override {
    void* ptr = HostBlockAlloc(bytes);
    if (ptr == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("CPU allocation of ", bytes, " bytes failed"));
    }
    return ptr;
  }
  void Free(void* ptr) override { std::free(ptr); }
};

// The memory this process may use: the machine's, or its cgroup (v2)
// limit where that is lower; 0 when unknown.
size_t UsableMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGE_SIZE);
  size_t bytes = pages > 0 && page_bytes > 0 ? static_cast<size_t>(pages) * page_bytes : 0;
  std::ifstream limit_file("/sys/fs/cgroup/memory.max");
  std::string limit;
  uint64_t limit_bytes = 0;
  if (limit_file >> limit && absl::SimpleAtoi(limit, &limit_bytes) && limit_bytes > 0 &&
      (bytes == 0 || limit_bytes < bytes)) {
    bytes = static_cast<size_t>(limit_bytes);
  }
  return bytes;
}

// Host blocks from 1 MiB up are cached: glibc returns large blocks to the
// kernel with munmap, and mapping them again costs a page fault per 4 KiB on
// every op call (a 32 MiB activation: ~8k faults). Smaller blocks are left to
// malloc. CpuCacheCapBytes caps the cache.
CachingAllocator::Options CpuCacheOptions() {
  CachingAllocator::Options options;
  options.min_cached_bytes = size_t{1} << 20;
  options.max_cached_bytes = CpuCacheCapBytes();
  return options;
}

}  // namespace

size_t DefaultCpuCacheCapBytes(size_t memory_bytes) {
  return std::max(size_t{2048} << 20, memory_bytes / 4);
}

size_t CpuCacheCapBytes() {
  int64_t megabytes = 0;
  const char* env = std::getenv("TFM_CPU_CACHE_MB");
  if (env != nullptr && absl::SimpleAtoi(env, &megabytes) && megabytes >= 0) {
    return static_cast<size_t>(megabytes) << 20;
  }
  return DefaultCpuCacheCapBytes(UsableMemoryBytes());
}

namespace {

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

std::string CpuAllocatorSummary() {
  return absl::StrCat("caching (host blocks >= 1 MiB kept, cap ", CpuCacheCapBytes() >> 20,
                      " MiB; glibc malloc below); ",
                      HostHugePagesOn() ? "blocks >= 2 MiB on huge pages (MADV_HUGEPAGE"
                                        : "huge pages only while training (MADV_HUGEPAGE",
                      "; the kernel's transparent huge pages: ", TransparentHugePagesMode(), ")");
}

namespace {
const internal::EnvironmentLineRegistrar allocator_line("allocator", CpuAllocatorSummary);
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
