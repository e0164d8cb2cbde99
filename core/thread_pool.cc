#include "core/thread_pool.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"

namespace tfm {

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < std::max(1, num_threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* pool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pool->mu_) {
            return pool->stopping_ || !pool->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // Stopping and drained.
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(max_chunks, num_threads());
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  const int64_t chunk_size = (n + chunks - 1) / chunks;
  int64_t remaining = chunks - 1;  // Guarded by mu_.
  {
    absl::MutexLock lock(&mu_);
    for (int64_t c = 1; c < chunks; ++c) {
      const int64_t begin = c * chunk_size;
      const int64_t end = std::min(n, begin + chunk_size);
      queue_.emplace_back([this, &fn, &remaining, begin, end] {
        if (begin < end) fn(begin, end);
        absl::MutexLock done_lock(&mu_);
        --remaining;
      });
    }
  }
  fn(0, std::min(n, chunk_size));  // The caller takes the first chunk.
  // While waiting, the caller runs queued work itself, so a ParallelFor nested
  // inside a worker's task cannot deadlock the pool.
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      struct Wake {
        ThreadPool* pool;
        int64_t* remaining;
      } wake{this, &remaining};
      mu_.Await(absl::Condition(
          +[](Wake* w) { return *w->remaining == 0 || !w->pool->queue_.empty(); }, &wake));
      if (remaining == 0) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

ThreadPool* ThreadPool::Default() {
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
