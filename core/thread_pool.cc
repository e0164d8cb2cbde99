#include "core/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "core/check.h"

namespace tfm {
namespace {

constexpr int kChunkBits = 16;
constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;

uint32_t Generation(uint64_t job) { return static_cast<uint32_t>(job >> 32); }
int64_t ChunkCount(uint64_t job) { return static_cast<int64_t>((job >> kChunkBits) & kChunkMask); }
int64_t NextChunk(uint64_t job) { return static_cast<int64_t>(job & kChunkMask); }

// The pool whose chunk this thread is running, if any: nested loops run inline.
thread_local const ThreadPool* running_pool = nullptr;
// Set by ScopedInlineLoops: this thread's loops run inline.
thread_local bool inline_loops = false;

class RunningScope {
 public:
  explicit RunningScope(const ThreadPool* pool) : saved_(running_pool) { running_pool = pool; }
  ~RunningScope() { running_pool = saved_; }

 private:
  const ThreadPool* saved_;
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  TFM_CHECK(num_threads < (1 << kChunkBits), "thread count exceeds the job word's chunk field");
  for (int i = 1; i < std::max(1, num_threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::RunChunks(uint32_t generation) {
  RunningScope scope(this);
  uint64_t job = job_.load(std::memory_order_acquire);
  while (Generation(job) == generation && NextChunk(job) < ChunkCount(job)) {
    if (!job_.compare_exchange_weak(job, job + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      continue;  // `job` now holds the fresh word.
    }
    // The claimed chunk keeps pending_ above 0, so the job's fields stay put.
    const int64_t begin = NextChunk(job) * chunk_size_;
    const int64_t end = std::min(n_, begin + chunk_size_);
    if (begin < end) (*fn_)(begin, end);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
    job = job_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop() {
  uint32_t seen = Generation(job_.load(std::memory_order_acquire));
  while (true) {
    const auto spin_until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    uint32_t generation = seen;
    for (int i = 0;; ++i) {
      generation = Generation(job_.load(std::memory_order_acquire));
      if (generation != seen || stopping_.load(std::memory_order_relaxed)) break;
      _mm_pause();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > spin_until) break;
    }
    if (generation == seen) {
      std::unique_lock<std::mutex> lock(sleep_mu_);
      sleepers_.fetch_add(1);
      // sleepers_ is raised before the generation is read again, and
      // ParallelFor publishes before it reads sleepers_ (both seq_cst): one
      // of the two always sees the other, so no wake-up is lost.
      wake_.wait(lock, [&] {
        return stopping_.load() || Generation(job_.load()) != seen;
      });
      sleepers_.fetch_sub(1);
      generation = Generation(job_.load(std::memory_order_acquire));
    }
    if (stopping_.load()) return;
    seen = generation;
    RunChunks(generation);
  }
}

ThreadPool::ScopedInlineLoops::ScopedInlineLoops() : saved_(inline_loops) { inline_loops = true; }

ThreadPool::ScopedInlineLoops::~ScopedInlineLoops() { inline_loops = saved_; }

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, num_threads());
  if (chunks <= 1 || running_pool == this || inline_loops) {
    fn(0, n);
    return;
  }
  std::unique_lock<std::mutex> owner(owner_mu_, std::try_to_lock);
  if (!owner.owns_lock()) {  // Another thread's loop holds the pool.
    fn(0, n);
    return;
  }
  fn_ = &fn;
  n_ = n;
  chunk_size_ = (n + chunks - 1) / chunks;
  pending_.store(chunks, std::memory_order_relaxed);
  const uint32_t generation = Generation(job_.load(std::memory_order_relaxed)) + 1;
  job_.store((uint64_t{generation} << 32) | (static_cast<uint64_t>(chunks) << kChunkBits));
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mu_);
    wake_.notify_all();
  }
  RunChunks(generation);  // The caller claims chunks too, from the first.
  while (pending_.load(std::memory_order_acquire) != 0) _mm_pause();
}

namespace {
// Set by ThreadPool::ScopedDefault; null means the process-wide pool.
std::atomic<ThreadPool*> default_override{nullptr};
}  // namespace

ThreadPool::ScopedDefault::ScopedDefault(ThreadPool* pool) : saved_(default_override.load()) {
  default_override.store(pool);
}

ThreadPool::ScopedDefault::~ScopedDefault() { default_override.store(saved_); }

ThreadPool* ThreadPool::Default() {
  if (ThreadPool* chosen = default_override.load(std::memory_order_acquire)) return chosen;
  static ThreadPool* pool = [] {
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    const char* env = std::getenv("TFM_NUM_THREADS");
    int from_env = 0;
    if (env != nullptr && absl::SimpleAtoi(env, &from_env) && from_env > 0) {
      threads = from_env;
    }
    return new ThreadPool(std::max(1, threads));
  }();
  return pool;
}

}  // namespace tfm
