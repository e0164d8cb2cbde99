#include "core/caching_allocator.h"

#include <cstdlib>
#include <set>
#include <string>

#include "core/allocator.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// Host memory standing in for cudaMalloc, counting calls and enforcing a cap.
class FakeSystemMemory : public SystemMemory {
 public:
  explicit FakeSystemMemory(size_t capacity) : capacity_(capacity) {}
  absl::StatusOr<void*> Malloc(size_t bytes) override {
    if (used_ + bytes > capacity_) return absl::ResourceExhaustedError("fake OOM");
    used_ += bytes;
    ++mallocs;
    void* ptr = std::malloc(bytes);
    sizes_[ptr] = bytes;
    return ptr;
  }
  void Free(void* ptr) override {
    used_ -= sizes_.at(ptr);
    sizes_.erase(ptr);
    ++frees;
    std::free(ptr);
  }
  int mallocs = 0;
  int frees = 0;

 private:
  size_t capacity_;
  size_t used_ = 0;
  std::map<void*, size_t> sizes_;
};

StreamHandle Stream(int id) { return reinterpret_cast<StreamHandle>(static_cast<intptr_t>(id)); }

class CachingAllocatorTest : public ::testing::Test {
 protected:
  CachingAllocatorTest() {
    auto memory = std::make_unique<FakeSystemMemory>(1 << 20);
    memory_ = memory.get();
    allocator_ = std::make_unique<CachingAllocator>(Device::Cuda(0), std::move(memory));
  }
  FakeSystemMemory* memory_;
  std::unique_ptr<CachingAllocator> allocator_;
};

TEST_F(CachingAllocatorTest, ReusesFreedBlockOnTheSameStream) {
  void* a = *allocator_->Allocate(1000, Stream(1));
  allocator_->Free(a);
  void* b = *allocator_->Allocate(900, Stream(1));  // Same rounded size class.
  EXPECT_EQ(a, b);
  EXPECT_EQ(memory_->mallocs, 1);
  EXPECT_EQ(allocator_->stats().num_allocs, 2);
  EXPECT_EQ(allocator_->stats().num_system_allocs, 1);
  allocator_->Free(b);
}

TEST_F(CachingAllocatorTest, DoesNotReuseAcrossStreams) {
  void* a = *allocator_->Allocate(1000, Stream(1));
  allocator_->Free(a);
  void* b = *allocator_->Allocate(1000, Stream(2));
  EXPECT_NE(a, b);
  EXPECT_EQ(memory_->mallocs, 2);
  // The block freed on stream 1 is still there for stream 1.
  void* c = *allocator_->Allocate(1000, Stream(1));
  EXPECT_EQ(a, c);
  allocator_->Free(b);
  allocator_->Free(c);
}

TEST_F(CachingAllocatorTest, BestFitAndWasteLimit) {
  void* big = *allocator_->Allocate(64 * 1024, Stream(0));
  void* mid = *allocator_->Allocate(4096, Stream(0));
  allocator_->Free(big);
  allocator_->Free(mid);
  void* fit = *allocator_->Allocate(3000, Stream(0));
  EXPECT_EQ(fit, mid);  // The smallest cached block that fits.
  // A 1 KiB request does not take the 64 KiB block (over 50% waste).
  void* small = *allocator_->Allocate(1024, Stream(0));
  EXPECT_NE(small, big);
  EXPECT_EQ(memory_->mallocs, 3);
  allocator_->Free(fit);
  allocator_->Free(small);
}

TEST_F(CachingAllocatorTest, StatsTrackUseAndReserve) {
  void* a = *allocator_->Allocate(512, Stream(0));
  void* b = *allocator_->Allocate(1024, Stream(0));
  EXPECT_EQ(allocator_->stats().bytes_in_use, 1536);
  allocator_->Free(a);
  EXPECT_EQ(allocator_->stats().bytes_in_use, 1024);
  EXPECT_EQ(allocator_->stats().bytes_reserved, 1536);
  EXPECT_EQ(allocator_->stats().peak_bytes_in_use, 1536);
  allocator_->EmptyCache();
  EXPECT_EQ(allocator_->stats().bytes_reserved, 1024);
  EXPECT_EQ(memory_->frees, 1);
  allocator_->Free(b);
}

TEST_F(CachingAllocatorTest, OutOfMemoryReleasesCacheAndRetries) {
  void* a = *allocator_->Allocate(600 * 1024, Stream(1));
  allocator_->Free(a);  // Cached for stream 1 only.
  // Stream 2 cannot reuse it and the cap leaves no room: the allocator must
  // return the cached block to the system and succeed.
  absl::StatusOr<void*> b = allocator_->Allocate(600 * 1024, Stream(2));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(memory_->frees, 1);
  // Counted: a captured CUDA graph's temporaries may have been among them.
  EXPECT_EQ(allocator_->stats().num_cache_releases, 1);
  absl::StatusOr<void*> c = allocator_->Allocate(600 * 1024, Stream(2));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(c.status().message().find("cuda:0"), std::string::npos);
  EXPECT_EQ(allocator_->stats().num_cache_releases, 1);  // Nothing cached to give back.
  allocator_->Free(*b);
}

// While a CUDA graph is being captured (MayRelease false) a full device
// keeps its cached blocks: the allocation fails, and succeeds once releasing
// is allowed again.
class NoReleaseMemory final : public FakeSystemMemory {
 public:
  using FakeSystemMemory::FakeSystemMemory;
  bool MayRelease() override { return may_release; }
  bool may_release = false;
};

TEST(CachingAllocatorCaptureTest, OutOfMemoryDuringACaptureKeepsTheCache) {
  auto memory = std::make_unique<NoReleaseMemory>(1 << 20);
  NoReleaseMemory* fake = memory.get();
  CachingAllocator allocator(Device::Cuda(0), std::move(memory));
  void* a = *allocator.Allocate(600 * 1024, Stream(1));
  allocator.Free(a);  // Cached for stream 1 only.
  absl::StatusOr<void*> during = allocator.Allocate(600 * 1024, Stream(2));
  ASSERT_FALSE(during.ok());
  EXPECT_EQ(during.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(fake->frees, 0);
  EXPECT_EQ(allocator.stats().num_cache_releases, 0);
  EXPECT_EQ(allocator.stats().bytes_reserved, 600 * 1024);
  fake->may_release = true;
  absl::StatusOr<void*> after = allocator.Allocate(600 * 1024, Stream(2));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(fake->frees, 1);
  EXPECT_EQ(allocator.stats().num_cache_releases, 1);
  allocator.Free(*after);
}

TEST(CachingAllocatorOptionsTest, SmallBlocksBypassTheCacheAndTheCacheIsCapped) {
  auto memory = std::make_unique<FakeSystemMemory>(1 << 20);
  FakeSystemMemory* fake = memory.get();
  CachingAllocator::Options options;
  options.min_cached_bytes = 4096;
  options.max_cached_bytes = 16384;
  CachingAllocator allocator(Device::Cpu(), std::move(memory), options);

  void* small = *allocator.Allocate(1024, nullptr);
  allocator.Free(small);
  EXPECT_EQ(fake->frees, 1);  // Below min_cached_bytes: straight back.
  EXPECT_EQ(allocator.stats().bytes_reserved, 0);

  void* a = *allocator.Allocate(12288, nullptr);
  void* b = *allocator.Allocate(8192, nullptr);
  allocator.Free(a);  // Cached: 12 KiB of 16.
  EXPECT_EQ(fake->frees, 1);
  allocator.Free(b);  // Would make 20 KiB: over the cap, so released.
  EXPECT_EQ(fake->frees, 2);
  EXPECT_EQ(allocator.stats().bytes_reserved, 12288);
  EXPECT_EQ(*allocator.Allocate(12000, nullptr), a);  // The cached one is reused.
  allocator.Free(a);
}

TEST(CpuAllocatorTest, ReusesLargeBlocks) {
  Allocator* cpu = CpuAllocator();
  void* first = *cpu->Allocate(8 << 20, nullptr);
  cpu->Free(first);
  const int64_t system_allocs = cpu->stats().num_system_allocs;
  void* second = *cpu->Allocate(8 << 20, nullptr);
  EXPECT_EQ(second, first);
  EXPECT_EQ(cpu->stats().num_system_allocs, system_allocs);
  cpu->Free(second);
}

TEST(CpuAllocatorTest, AlignsAndCounts) {
  Allocator* cpu = CpuAllocator();
  const AllocatorStats before = cpu->stats();
  std::set<void*> seen;
  for (size_t bytes : {1, 63, 64, 65, 4097}) {
    void* ptr = *cpu->Allocate(bytes, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % kCpuAlignment, 0u);
    EXPECT_TRUE(seen.insert(ptr).second);
  }
  EXPECT_EQ(cpu->stats().num_allocs, before.num_allocs + 5);
  for (void* ptr : seen) cpu->Free(ptr);
  EXPECT_EQ(cpu->stats().bytes_in_use, before.bytes_in_use);
}

// The host cache's cap: a quarter of the usable memory, at least 2 GiB
// (also when the memory is unknown); TFM_CPU_CACHE_MB wins.
TEST(CpuAllocatorTest, CacheCapIsAQuarterOfMemoryAtLeastTwoGiB) {
  constexpr size_t kGiB = size_t{1} << 30;
  EXPECT_EQ(DefaultCpuCacheCapBytes(0), 2 * kGiB);
  EXPECT_EQ(DefaultCpuCacheCapBytes(4 * kGiB), 2 * kGiB);
  EXPECT_EQ(DefaultCpuCacheCapBytes(8 * kGiB), 2 * kGiB);
  EXPECT_EQ(DefaultCpuCacheCapBytes(24 * kGiB), 6 * kGiB);
  EXPECT_EQ(DefaultCpuCacheCapBytes(256 * kGiB), 64 * kGiB);
  const char* before = std::getenv("TFM_CPU_CACHE_MB");
  const std::string saved = before != nullptr ? before : "";
  setenv("TFM_CPU_CACHE_MB", "300", 1);
  EXPECT_EQ(CpuCacheCapBytes(), size_t{300} << 20);
  unsetenv("TFM_CPU_CACHE_MB");
  EXPECT_GE(CpuCacheCapBytes(), 2 * kGiB);
  if (before != nullptr) setenv("TFM_CPU_CACHE_MB", saved.c_str(), 1);
}

TEST(AllocatorForTest, CudaWithoutGpuIsAnErrorNotACrash) {
  absl::StatusOr<Allocator*> allocator = AllocatorFor(Device::Cuda(1000));
  // Either no CUDA in this build or no GPU 1000 on this machine.
  EXPECT_FALSE(allocator.ok());
}

}  // namespace
}  // namespace tfm
