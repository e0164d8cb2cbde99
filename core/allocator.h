// Device memory allocators and the per-device allocator table.
#ifndef TFM_CORE_ALLOCATOR_H_
#define TFM_CORE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device.h"

namespace tfm {

struct AllocatorStats {
  int64_t bytes_in_use = 0;     // Handed out and not yet freed.
  int64_t bytes_reserved = 0;   // Held from the system (in use + cached).
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;       // Allocate() calls that succeeded.
  int64_t num_system_allocs = 0;  // Calls that reached the system allocator.
  // Times the cached free blocks went back to the system (an allocation
  // that found the device full, EmptyCache): a captured CUDA graph's
  // temporaries among them may since belong to other tensors.
  int64_t num_cache_releases = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Returns `bytes` of memory usable on `stream` (ignored on the CPU), or
  // ResourceExhausted. Zero bytes returns a valid unique pointer.
  virtual absl::StatusOr<void*> Allocate(size_t bytes, StreamHandle stream) = 0;
  virtual void Free(void* ptr) = 0;
  virtual Device device() const = 0;
  virtual AllocatorStats stats() const = 0;
};

// Alignment of every CPU allocation: a cache line, which also suits AVX-512.
inline constexpr size_t kCpuAlignment = 64;

// `bytes` (0 counts as 1) of host memory from the C library starting on a
// kCpuAlignment boundary, freed with std::free; null if none is left.
void* AlignedHostAlloc(size_t bytes);

// While training, host blocks of at least this many bytes start on a huge
// page and ask the kernel for transparent huge pages (MADV_HUGEPAGE) over
// their whole 2 MiB pages: an update streams through megabytes of
// activations, and with 4 KiB pages each stream walks the page tables every
// 4 KiB. On a 2-core AMX Xeon the CPU updates ran 2-10% faster (small and
// base, f32 and bf16). Decoding leaves them off: a base-sized model's
// batched search ran about 10% slower with them
// (benchmarks/results/decode_cpu_xeon_random_base_huge_pages_ab.txt). Many
// kernels grant them only where asked (transparent_hugepage/enabled =
// madvise).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Whether host blocks from kHugePageBytes up ask for huge pages: after
// SetHostHugePagesForTraining(true), or always with TFM_HUGE_PAGES=1, never
// with TFM_HUGE_PAGES=0 (the variable is read once).
bool HostHugePagesOn();

// Called by the trainer with true: from now on this process's large host
// blocks ask for huge pages (blocks already allocated stay as they are).
void SetHostHugePagesForTraining(bool on);

// A host block for the CPU allocator: AlignedHostAlloc's, or from
// kHugePageBytes up (with HostHugePagesOn) aligned to a huge page and
// advised to use them. Freed with std::free; null if none is left.
void* HostBlockAlloc(size_t bytes);

// The kernel's transparent huge page mode ("always", "madvise", "never"),
// "unknown" where it does not say.
std::string TransparentHugePagesMode();

// The process-wide host allocator: aligned, thread-safe, caching blocks of
// 1 MiB and more (see allocator.cc); while training, on huge pages from
// kHugePageBytes.
Allocator* CpuAllocator();

// What CpuAllocator does on this machine, in a line: the environment
// report's "allocator" line (benchmarks, logs, --list).
std::string CpuAllocatorSummary();

// The most bytes of free host blocks CpuAllocator keeps for reuse:
// TFM_CPU_CACHE_MB when set, else DefaultCpuCacheCapBytes of the memory the
// process may use (the machine's, or its cgroup's limit where lower). A
// training update frees and allocates the same large blocks every step; a
// block given back to the system comes back as a page fault per 4 KiB.
size_t CpuCacheCapBytes();

// A quarter of `memory_bytes`, at least 2 GiB (also when the memory is
// unknown: 0). With 2 GiB the CPU base preset's update gave back its
// embedding gradients and more each step: 7% of its time in page faults.
size_t DefaultCpuCacheCapBytes(size_t memory_bytes);

// Returns the allocator for `device`, creating it on first use.
// CUDA allocators exist only in builds with CUDA and on machines with a GPU;
// otherwise the error says which.
absl::StatusOr<Allocator*> AllocatorFor(const Device& device);

// Installs the factory used for devices of `type` (the CUDA backend calls
// this at static initialisation). Returns an error if one is installed.
using AllocatorFactory =
    std::function<absl::StatusOr<std::unique_ptr<Allocator>>(int index)>;
absl::Status RegisterAllocatorFactory(DeviceType type, AllocatorFactory factory);

}  // namespace tfm

#endif  // TFM_CORE_ALLOCATOR_H_
