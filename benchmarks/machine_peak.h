// What this machine can do at most, measured in the same run as the
// benchmark so every row can be held against it: the FMA peak (clock x FMA
// units x vector width x 2 flops x threads) and a STREAM-like copy bandwidth.
// Nothing comes from a table of CPU models.
#ifndef TFM_BENCHMARKS_MACHINE_PEAK_H_
#define TFM_BENCHMARKS_MACHINE_PEAK_H_

#include <string>

namespace tfm {
namespace bench {

struct MachinePeak {
  int threads = 1;
  // Measured on every thread at once (the slowest counts): a chain of
  // dependent integer adds, one per cycle on every x86 core since the P6,
  // timed with the steady clock, best of 5 trials. So the clock under an
  // all-core load.
  double clock_ghz = 0;
  // Independent vector FMAs retired per cycle on one core (12 accumulators,
  // more than latency x units on any current core): the FMA units.
  double fma_per_cycle = 0;
  int vector_floats = 8;  // f32 lanes of the vectors our kernels use.
  // STREAM "copy" (a[i] = b[i], bytes read + written) over 256 MiB arrays on
  // `threads` threads, best of 5.
  double copy_gb_per_s = 0;

  double FmaPeakGflops() const {
    return threads * fma_per_cycle * vector_floats * 2 * clock_ghz;
  }
  // "clock 2.89 GHz (dependent-add chain), 2.0 FMA/cycle, 8 f32 lanes, 2
  // threads: FMA peak 185 GFLOP/s; copy bandwidth 21.3 GB/s"
  std::string Summary() const;
};

// Measures on ThreadPool::Default() (its threads are the benchmark's);
// takes about a second.
MachinePeak MeasureMachinePeak();

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_MACHINE_PEAK_H_
