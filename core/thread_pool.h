// A fixed pool of worker threads for CPU kernels.
//
// Parallel loops here are sub-millisecond (an add over 2M floats, one GEMM
// panel), so the hand-off must cost about what OpenMP's does: workers spin on
// an atomic job word for a while after each loop (kSpinMicros) before they
// sleep on a condition variable, and a loop is published with one atomic
// store, not a mutex-protected queue. Chunks are claimed with a CAS on a word
// that packs (job generation, chunk count, next chunk), so a worker that wakes
// late can never run a chunk of the wrong job.
#ifndef TFM_CORE_THREAD_POOL_H_
#define TFM_CORE_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

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
  // `grain` long (except the last), and returns when all are done. A call
  // made from inside a chunk of this pool, or while another thread's loop
  // holds the pool, runs inline (never deadlocks, never oversubscribes).
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)>& fn);

  // The process-wide pool: TFM_NUM_THREADS threads, else one per core; or,
  // while a ScopedDefault lives, the pool it names.
  static ThreadPool* Default();

  // Makes `pool` the Default() of the whole process until destroyed, so that
  // one test can run a kernel on pools of 1, 2 and 3 threads and compare the
  // bits (CPU kernels promise results independent of the thread count).
  // Not for use while other threads run kernels.
  class ScopedDefault {
   public:
    explicit ScopedDefault(ThreadPool* pool);
    ~ScopedDefault();
    ScopedDefault(const ScopedDefault&) = delete;
    ScopedDefault& operator=(const ScopedDefault&) = delete;

   private:
    ThreadPool* saved_;
  };

  // While one lives, this thread's ParallelFor calls (every pool's) run
  // inline: for a thread that is itself one of several working side by side
  // (a search decoding its own batches, as CTranslate2's inter_threads).
  class ScopedInlineLoops {
   public:
    ScopedInlineLoops();
    ~ScopedInlineLoops();
    ScopedInlineLoops(const ScopedInlineLoops&) = delete;
    ScopedInlineLoops& operator=(const ScopedInlineLoops&) = delete;

   private:
    bool saved_;
  };

  // How long an idle worker spins before it sleeps. libgomp spins about as
  // long by default (GOMP_SPINCOUNT), which is what PyTorch's loops pay.
  static constexpr int64_t kSpinMicros = 200;

 private:
  void WorkerLoop();
  // Claims and runs chunks of job `generation` until none is left.
  void RunChunks(uint32_t generation);

  std::vector<std::thread> workers_;

  // The job word: generation (32 bits) | chunk count (16) | next chunk (16).
  std::atomic<uint64_t> job_{0};
  std::atomic<int64_t> pending_{0};  // Chunks of the current job not yet finished.
  // The current job, written before job_ publishes it and stable until
  // pending_ reaches 0.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_size_ = 0;

  std::mutex owner_mu_;  // Held by the thread whose loop the pool runs.
  std::mutex sleep_mu_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace tfm

#endif  // TFM_CORE_THREAD_POOL_H_
