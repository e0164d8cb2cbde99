// A caching allocator with per-stream reuse, for devices where the system
// allocator is slow and synchronising (cudaMalloc/cudaFree).
//
// Freed blocks go to a pool keyed by the stream they were allocated on and are
// reused only by later allocations on that same stream: work queued on one
// stream runs in order, so a block freed there cannot still be in use by
// earlier kernels when the next allocation on the stream receives it. Reusing
// it on another stream would need an event, which this allocator avoids.
//
// The caching logic is independent of CUDA: the system allocator is a
// `SystemMemory` backend, which tests replace with a host fake.
#ifndef TFM_CORE_CACHING_ALLOCATOR_H_
#define TFM_CORE_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/allocator.h"

namespace tfm {

// The uncached allocator underneath (cudaMalloc/cudaFree for CUDA).
class SystemMemory {
 public:
  virtual ~SystemMemory() = default;
  virtual absl::StatusOr<void*> Malloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  // Whether cached blocks may be given back now, when an allocation finds
  // the device full. Not while a CUDA graph is being captured: cudaFree then
  // may be refused or break the capture, and a refused free would lose the
  // block from the books for good. The allocation fails instead; the
  // captured step's eager re-run, outside the capture, releases and retries.
  virtual bool MayRelease() { return true; }
};

class CachingAllocator final : public Allocator {
 public:
  // Requests are rounded up to this many bytes so nearby sizes share blocks.
  static constexpr size_t kRoundBytes = 512;
  // A cached block serves a request only if it wastes at most this fraction
  // of itself, so a large cached block is not tied up by a tiny tensor.
  static constexpr double kMaxWasteFraction = 0.5;

  struct Options {
    // Requests below this size bypass the cache (the system allocator is
    // good at small blocks on the host).
    size_t min_cached_bytes = 0;
    // Freed blocks beyond this many cached bytes go back to the system, so
    // the cache cannot grow without bound when shapes keep changing.
    size_t max_cached_bytes = SIZE_MAX;
  };

  CachingAllocator(Device device, std::unique_ptr<SystemMemory> memory);
  CachingAllocator(Device device, std::unique_ptr<SystemMemory> memory, Options options);
  ~CachingAllocator() override;

  absl::StatusOr<void*> Allocate(size_t bytes, StreamHandle stream) override;
  void Free(void* ptr) override;
  Device device() const override { return device_; }
  AllocatorStats stats() const override;

  // Returns every cached (free) block to the system allocator.
  void EmptyCache();

 private:
  struct Block {
    size_t size;
    StreamHandle stream;
    bool cacheable;
  };
  // size -> block, best fit; among equal sizes the first freed first. Flat
  // containers: an allocation and a free, which every op call makes, then
  // allocate no nodes of their own.
  using FreePool = absl::btree_multimap<size_t, void*>;

  void EmptyCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Device device_;
  const std::unique_ptr<SystemMemory> memory_;
  const Options options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<void*, Block> in_use_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<void*, Block> cached_ ABSL_GUARDED_BY(mu_);
  std::map<StreamHandle, FreePool> free_by_stream_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tfm

#endif  // TFM_CORE_CACHING_ALLOCATOR_H_
