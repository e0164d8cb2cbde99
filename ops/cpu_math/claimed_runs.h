// Work items split over a pool's threads in runs claimed as threads come
// free, where ThreadPool::ParallelFor hands each thread a fixed share. On the
// 2-core AMX Xeon of the int8 work the pool's second thread ran its share of
// every kernel about a fifth slower than the calling thread whenever both
// ran (either core alone is as fast), so with fixed halves the calling
// thread waited at the end of every product
// (benchmarks/results/decode_cpu_xeon_int8_thread_split_ab.txt). The items
// must be independent and each computed the same way wherever it runs, so
// that the bits never depend on which thread took which run. Not a rule for
// every kernel: f32 decoding's packed_linear ran slower with it (215 against
// 224 lines/s at batch 32, 6 pairs), its fixed panel-major shares each
// reading a thread's part of the weight once.
#ifndef TFM_OPS_CPU_MATH_CLAIMED_RUNS_H_
#define TFM_OPS_CPU_MATH_CLAIMED_RUNS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/thread_pool.h"

namespace tfm {

// Runs run(first, last) over runs covering [0, items), then done() once on
// each thread that took part. Work of at most one `grain` of items runs on
// the calling thread alone (as ParallelFor would); otherwise runs of about
// a quarter of a thread's share, rounded up to a multiple of `multiple`
// (AMX's panel pairs), are claimed in order.
template <typename Run, typename Done>
void RunClaimedRuns(ThreadPool* pool, int64_t items, int64_t grain, int64_t multiple,
                    const Run& run, const Done& done) {
  const int64_t threads = pool->num_threads();
  if (threads == 1 || items <= grain) {
    run(0, items);
    done();
    return;
  }
  int64_t step = std::max<int64_t>(1, (items + 4 * threads - 1) / (4 * threads));
  step = (step + multiple - 1) / multiple * multiple;
  std::atomic<int64_t> next{0};
  pool->ParallelFor(threads, 1, [&](int64_t, int64_t) {
    for (int64_t first = next.fetch_add(step); first < items; first = next.fetch_add(step)) {
      run(first, std::min(first + step, items));
    }
    done();
  });
}

}  // namespace tfm

#endif  // TFM_OPS_CPU_MATH_CLAIMED_RUNS_H_
