#include "benchmarks/machine_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"

namespace tfm {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Cycles per second of this core: 8 dependent adds per loop trip, each
// waiting on the one before (1 cycle latency); the loop counter runs beside
// them on other ports.
double MeasureClockHz() {
  constexpr int64_t kTrips = 10'000'000;
  uint64_t value = 0;
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < kTrips; ++i) {
    asm volatile(
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
        "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
        : "+r"(value));
  }
  return 8.0 * kTrips / Seconds(start);
}

// Vector FMAs per second on this core with 12 independent accumulators
// (enough to cover 2 units x 5 cycles of latency), at
// the widest vectors the CPU runs. The build's baseline is x86-64, so each
// width is its own function compiled for its own target; one macro body
// keeps the two loops identical. The accumulators are named variables, not
// an array: indexed in a loop they live in memory and every FMA waits on a
// store-to-load round trip, which reads as 1 FMA/cycle on a 2-unit core.
#define TFM_FMA_PER_SECOND(Vec, Set1, Fma, First)                          \
  constexpr int64_t kTrips = 4'000'000;                                   \
  constexpr int kChains = 12;                                              \
  Vec c0 = Set1(0.f), c1 = Set1(1.f), c2 = Set1(2.f), c3 = Set1(3.f);      \
  Vec c4 = Set1(4.f), c5 = Set1(5.f), c6 = Set1(6.f), c7 = Set1(7.f);      \
  Vec c8 = Set1(8.f), c9 = Set1(9.f), c10 = Set1(10.f), c11 = Set1(11.f);  \
  const Vec a = Set1(0.999999f), b = Set1(1e-7f);                          \
  const Clock::time_point start = Clock::now();                            \
  for (int64_t i = 0; i < kTrips; ++i) {                                   \
    c0 = Fma(c0, a, b); c1 = Fma(c1, a, b); c2 = Fma(c2, a, b);            \
    c3 = Fma(c3, a, b); c4 = Fma(c4, a, b); c5 = Fma(c5, a, b);            \
    c6 = Fma(c6, a, b); c7 = Fma(c7, a, b); c8 = Fma(c8, a, b);            \
    c9 = Fma(c9, a, b); c10 = Fma(c10, a, b); c11 = Fma(c11, a, b);        \
    /* Keeps every FMA, and every accumulator in a register. */            \
    asm volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4),   \
                 "+v"(c5), "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9),         \
                 "+v"(c10), "+v"(c11));                                    \
  }                                                                        \
  const double seconds = Seconds(start);                                   \
  float sink = First(c0) + First(c1) + First(c2) + First(c3) + First(c4) + \
               First(c5) + First(c6) + First(c7) + First(c8) + First(c9) + \
               First(c10) + First(c11);                                    \
  asm volatile("" : : "x"(sink));                                          \
  return static_cast<double>(kChains) * kTrips / seconds;

__attribute__((target("avx2,fma"))) double FmaPerSecond8() {
  TFM_FMA_PER_SECOND(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_cvtss_f32)
}
__attribute__((target("avx512f"))) double FmaPerSecond16() {
  TFM_FMA_PER_SECOND(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_cvtss_f32)
}
#undef TFM_FMA_PER_SECOND

// Copies with ordinary loads and stores, as our kernels write (no
// non-temporal stores, which would skip the write-allocate reads).
__attribute__((target("avx2"))) void CopyFloats(const float* from, float* to, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) _mm256_store_ps(to + i, _mm256_load_ps(from + i));
}

// The best of 5 trials: other load on a shared machine only ever makes a
// trial slower, so the fastest is the closest to what the core can do.
template <typename F>
double BestOfFive(F measure) {
  double best = 0;
  for (int i = 0; i < 5; ++i) best = std::max(best, measure());
  return best;
}

}  // namespace

std::string MachinePeak::Summary() const {
  return absl::StrFormat(
      "clock %.2f GHz (measured: dependent-add chain on every thread, best of 5), %.1f "
      "FMA/cycle (measured: independent FMAs, best of 5), %d f32 lanes, %d threads: FMA peak %.1f GFLOP/s; "
      "copy bandwidth %.1f GB/s (STREAM-like copy, %d threads)",
      clock_ghz, fma_per_cycle, vector_floats, threads, FmaPeakGflops(), copy_gb_per_s,
      threads);
}

MachinePeak MeasureMachinePeak() {
  ThreadPool* pool = ThreadPool::Default();
  MachinePeak peak;
  peak.threads = pool->num_threads();

  std::vector<double> clocks(peak.threads);
  pool->ParallelFor(peak.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) clocks[t] = BestOfFive(MeasureClockHz);
  });
  const double clock_hz = *std::min_element(clocks.begin(), clocks.end());
  peak.clock_ghz = clock_hz / 1e9;
  // Rounded to the nearest whole unit: the loop's own overhead and clock
  // wobble make it read 1.9x where there are 2 units.
  // The widest vectors our kernels run here (core/cpu_features.h).
  const bool wide = ActiveCpuIsa() == CpuIsa::kAvx512;
  peak.vector_floats = wide ? 16 : 8;
  const double fma_per_second = BestOfFive(wide ? FmaPerSecond16 : FmaPerSecond8);
  peak.fma_per_cycle = std::max(1.0, std::round(fma_per_second / clock_hz));

  constexpr int64_t kFloats = int64_t{64} << 20;  // 256 MiB per array.
  const auto free_aligned = [](float* p) { std::free(p); };
  std::unique_ptr<float, decltype(free_aligned)> from(
      static_cast<float*>(std::aligned_alloc(64, kFloats * sizeof(float))), free_aligned);
  std::unique_ptr<float, decltype(free_aligned)> to(
      static_cast<float*>(std::aligned_alloc(64, kFloats * sizeof(float))), free_aligned);
  const int64_t chunk = kFloats / peak.threads / 8 * 8;
  const auto copy = [&] {
    pool->ParallelFor(peak.threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t first = t * chunk;
        const int64_t n = t + 1 == peak.threads ? kFloats - first : chunk;
        CopyFloats(from.get() + first, to.get() + first, n);
      }
    });
  };
  std::fill(from.get(), from.get() + kFloats, 1.0f);
  copy();  // Faults the destination's pages in before timing.
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point start = Clock::now();
    copy();
    best = std::min(best, Seconds(start));
  }
  peak.copy_gb_per_s = 2.0 * kFloats * sizeof(float) / best / 1e9;
  return peak;
}

}  // namespace bench
}  // namespace tfm
