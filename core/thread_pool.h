// A fixed pool of worker threads for CPU kernels.
#ifndef TFM_CORE_THREAD_POOL_H_
#define TFM_CORE_THREAD_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tfm {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread, which always takes part in
  // ParallelFor: a pool of 1 runs everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over disjoint chunks covering [0, n), each at least
  // `grain` long (except the last), and returns when all are done.
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)>& fn);

  // The process-wide pool: TFM_NUM_THREADS threads, else one per core.
  static ThreadPool* Default();

 private:
  void WorkerLoop();

  std::vector<std::thread> workers_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tfm

#endif  // TFM_CORE_THREAD_POOL_H_
