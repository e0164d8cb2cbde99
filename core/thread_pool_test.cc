#include "core/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
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

// Thousands of back-to-back small loops exercise the hand-off between jobs:
// a worker that wakes late must never run a chunk of the next job.
TEST(ThreadPoolTest, BackToBackSmallLoopsEachCoverEveryIndexOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(64);
  for (int round = 0; round < 20000; ++round) {
    const int64_t n = 2 + round % 63;
    pool.ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].exchange(0), 1) << round << " " << i;
  }
}

// Loops after the workers have gone to sleep still wake them and complete.
TEST(ThreadPoolTest, WakesSleepingWorkers) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(4 * ThreadPool::kSpinMicros));
    std::atomic<int64_t> total{0};
    pool.ParallelFor(3000, 1, [&](int64_t begin, int64_t end) { total += end - begin; });
    EXPECT_EQ(total.load(), 3000);
  }
}

// Two threads sharing one pool: one of them runs inline, both finish right.
TEST(ThreadPoolTest, ConcurrentCallersBothComplete) {
  ThreadPool pool(2);
  std::atomic<int64_t> totals[2] = {{0}, {0}};
  auto caller = [&](int which) {
    for (int round = 0; round < 2000; ++round) {
      pool.ParallelFor(100, 1, [&](int64_t begin, int64_t end) { totals[which] += end - begin; });
    }
  };
  std::thread other(caller, 1);
  caller(0);
  other.join();
  EXPECT_EQ(totals[0].load(), 200000);
  EXPECT_EQ(totals[1].load(), 200000);
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

// Under ScopedInlineLoops a loop runs as one chunk on the calling thread,
// and the pool splits loops again once it is gone.
TEST(ThreadPoolTest, ScopedInlineLoopsRunOnTheCallingThread) {
  ThreadPool pool(3);
  const auto chunks_of = [&pool] {
    std::atomic<int> chunks{0};
    std::atomic<bool> other_thread{false};
    const std::thread::id caller = std::this_thread::get_id();
    pool.ParallelFor(3000, 1, [&](int64_t, int64_t) {
      ++chunks;
      if (std::this_thread::get_id() != caller) other_thread = true;
    });
    return std::make_pair(chunks.load(), other_thread.load());
  };
  {
    const ThreadPool::ScopedInlineLoops inline_loops;
    EXPECT_EQ(chunks_of(), std::make_pair(1, false));
  }
  EXPECT_EQ(chunks_of().first, 3);
}

TEST(ThreadPoolTest, ScopedDefaultReplacesTheDefaultPoolUntilDestroyed) {
  ThreadPool* process_pool = ThreadPool::Default();
  ThreadPool outer(3), inner(1);
  {
    ThreadPool::ScopedDefault outer_scope(&outer);
    EXPECT_EQ(ThreadPool::Default(), &outer);
    {
      ThreadPool::ScopedDefault inner_scope(&inner);
      EXPECT_EQ(ThreadPool::Default(), &inner);
    }
    EXPECT_EQ(ThreadPool::Default(), &outer);
  }
  EXPECT_EQ(ThreadPool::Default(), process_pool);
}

}  // namespace
}  // namespace tfm
