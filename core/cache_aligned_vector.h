// std::vector whose storage starts on a cache line (kCpuAlignment), for the
// host scratch that tile and vector kernels read in whole lines: packed
// GEMM operands, quantized activations. malloc gives 16 bytes; an AMX tile
// load of 16 rows of 64 bytes from such a buffer touches 32 lines instead
// of 16, which halved the bf16 tiles' products in a microbenchmark (the
// twenty-second session's results).
#ifndef TFM_CORE_CACHE_ALIGNED_VECTOR_H_
#define TFM_CORE_CACHE_ALIGNED_VECTOR_H_

#include <cstddef>
#include <cstdlib>  // std::free
#include <new>
#include <vector>

#include "core/allocator.h"

namespace tfm {

template <typename T>
struct CacheAlignedAllocator {
  using value_type = T;

  CacheAlignedAllocator() = default;
  template <typename U>
  CacheAlignedAllocator(const CacheAlignedAllocator<U>&) {}  // NOLINT: rebinding.

  T* allocate(size_t n) {
    void* p = AlignedHostAlloc(n * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }

  template <typename U>
  bool operator==(const CacheAlignedAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const CacheAlignedAllocator<U>&) const {
    return false;
  }
};

template <typename T>
using CacheAlignedVector = std::vector<T, CacheAlignedAllocator<T>>;

}  // namespace tfm

#endif  // TFM_CORE_CACHE_ALIGNED_VECTOR_H_
