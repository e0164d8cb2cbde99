#include "core/caching_allocator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/check.h"

namespace tfm {

CachingAllocator::CachingAllocator(Device device, std::unique_ptr<SystemMemory> memory)
    : CachingAllocator(device, std::move(memory), Options()) {}

CachingAllocator::CachingAllocator(Device device, std::unique_ptr<SystemMemory> memory,
                                   Options options)
    : device_(device), memory_(std::move(memory)), options_(options) {}

CachingAllocator::~CachingAllocator() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
  // Blocks still in use are owned by live tensors of a dying process; freeing
  // them here would leave those tensors dangling, so they are left to the OS.
}

absl::StatusOr<void*> CachingAllocator::Allocate(size_t bytes, StreamHandle stream) {
  const size_t size =
      std::max<size_t>(1, (bytes + kRoundBytes - 1) / kRoundBytes) * kRoundBytes;
  const bool cacheable = size >= options_.min_cached_bytes;
  absl::MutexLock lock(&mu_);
  FreePool& pool = free_by_stream_[stream];
  auto best = cacheable ? pool.lower_bound(size) : pool.end();
  if (best != pool.end() &&
      static_cast<double>(best->first - size) <= kMaxWasteFraction * best->first) {
    void* ptr = best->second;
    pool.erase(best);
    Block block = cached_.at(ptr);
    cached_.erase(ptr);
    cached_bytes_ -= block.size;
    in_use_.emplace(ptr, block);
    stats_.bytes_in_use += block.size;
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
    ++stats_.num_allocs;
    return ptr;
  }
  absl::StatusOr<void*> fresh = memory_->Malloc(size);
  if (!fresh.ok() && memory_->MayRelease()) {
    // Out of memory with blocks cached: give them back and try once more.
    EmptyCacheLocked();
    fresh = memory_->Malloc(size);
  }
  if (!fresh.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "out of memory on ", device_.ToString(), " allocating ", bytes,
        " bytes (", stats_.bytes_in_use, " bytes in use): ",
        fresh.status().message()));
  }
  in_use_.emplace(*fresh, Block{size, stream, cacheable});
  stats_.bytes_in_use += size;
  stats_.bytes_reserved += size;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  ++stats_.num_allocs;
  ++stats_.num_system_allocs;
  return *fresh;
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  absl::MutexLock lock(&mu_);
  auto it = in_use_.find(ptr);
  TFM_CHECK(it != in_use_.end(), "freeing a pointer this allocator does not own");
  const Block block = it->second;
  in_use_.erase(it);
  stats_.bytes_in_use -= block.size;
  if (!block.cacheable || cached_bytes_ + block.size > options_.max_cached_bytes) {
    memory_->Free(ptr);
    stats_.bytes_reserved -= block.size;
    return;
  }
  cached_.emplace(ptr, block);
  cached_bytes_ += block.size;
  free_by_stream_[block.stream].emplace(block.size, ptr);
}

void CachingAllocator::EmptyCache() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  if (!cached_.empty()) ++stats_.num_cache_releases;
  for (auto& [ptr, block] : cached_) {
    memory_->Free(ptr);
    stats_.bytes_reserved -= block.size;
  }
  cached_.clear();
  cached_bytes_ = 0;
  free_by_stream_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace tfm
