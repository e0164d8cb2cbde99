#include "core/thread_pool.h"

#include <atomic>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  ThreadPool pool(4);
  for (int64_t n : {0, 1, 7, 1000, 12345}) {
    std::vector<std::atomic<int>> hits(n);
    pool.ParallelFor(n, 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " " << i;
  }
}

TEST(ThreadPoolTest, RespectsGrain) {
  ThreadPool pool(4);
  std::atomic<int> chunks{0};
  pool.ParallelFor(100, 60, [&](int64_t begin, int64_t end) { chunks++; });
  EXPECT_EQ(chunks.load(), 2);  // ceil(100 / 60) chunks at most.
}

TEST(ThreadPoolTest, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  pool.ParallelFor(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.ParallelFor(100, 1, [&](int64_t b, int64_t e) { total += e - b; });
    }
  });
  EXPECT_EQ(total.load(), 800);
}

TEST(ThreadPoolTest, SingleThreadRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.num_threads(), 1);
  int64_t sum = 0;  // No atomics needed: everything runs on this thread.
  pool.ParallelFor(10, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum += i;
  });
  EXPECT_EQ(sum, 45);
}

}  // namespace
}  // namespace tfm
