#include "ops/add/sum_rows_cpu.h"

#include <algorithm>

#include "core/thread_pool.h"

namespace tfm {

void SumRowsCpu(const float* in, int64_t rows, int64_t cols, float* out) {
  // Threads take disjoint column blocks and walk down the rows, so every
  // inner loop is a contiguous, vectorisable add and no partial sums need
  // merging.
  ThreadPool::Default()->ParallelFor(cols, 64, [&](int64_t begin, int64_t end) {
    std::fill(out + begin, out + end, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = in + r * cols;
      for (int64_t c = begin; c < end; ++c) out[c] += row[c];
    }
  });
}

}  // namespace tfm
