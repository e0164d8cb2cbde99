// int8 against f32 at decoding's shapes: quantized_linear (each int8
// kernel this CPU runs) against packed_linear (the f32 product decoding
// uses), rows 4 to 256 (beam x sentences) by the base model's products:
// 512 -> 512 (attention projections), 512 -> 2048 and 2048 -> 512 (feed-
// forward), 512 -> 8000 (the tied output projection). Prints GFLOP/s
// (2 rows in out per product, activations' quantization included) and the
// speedup of the active int8 kernel over f32. Before timing a case, every
// kernel's output is checked against the double reference: each int8
// kernel within its quantization bound (ops/quantized_linear/
// quantization_bound.h, what the kernel tests hold them to), f32 within
// 1e-5 of the largest output; a miss prints check: FAIL and fails the run.
//
//   bazel run -c opt //benchmarks:int8_linear -- [--threads=1] [--seconds=0.2]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "ops/packed_linear/packed_linear.h"
#include "ops/quantized_linear/quantization_bound.h"
#include "ops/quantized_linear/quantized_linear.h"
#include "ops/random/random.h"

ABSL_FLAG(int, threads, 1, "threads of the pool the products run on");
ABSL_FLAG(double, seconds, 0.2, "time each case for about this long");

namespace tfm {
namespace {

// Seconds per call: the best of 5 rounds of calls lasting `seconds` / 5.
double SecondsPerCall(const std::function<void()>& call, double seconds) {
  using Clock = std::chrono::steady_clock;
  call();  // Warm up (caches, the allocator).
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    int64_t calls = 0;
    const Clock::time_point start = Clock::now();
    double elapsed = 0;
    do {
      call();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < seconds / 5);
    best = std::min(best, elapsed / calls);
  }
  return best;
}

int Main() {
  const int threads = absl::GetFlag(FLAGS_threads);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  ThreadPool pool(threads);
  ThreadPool::ScopedDefault scoped(&pool);
  std::printf("cpu: %s\nthreads: %d\nint8 kernel: %s\n\n", CpuSummary().c_str(), threads,
              Int8KernelName(ActiveInt8Kernel()));
  const std::vector<Int8Kernel> kernels = HostInt8Kernels();
  std::printf("%-6s %-12s %10s", "rows", "in x out", "f32 GF/s");
  for (Int8Kernel kernel : kernels) {
    if (kernel != Int8Kernel::kScalar) std::printf(" %14s", Int8KernelName(kernel));
  }
  std::printf(" %12s\n", "int8/f32");
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {512, 512}, {512, 2048}, {2048, 512}, {512, 8000}};
  std::vector<double> speedups;
  uint64_t stream = 1;
  double worst_int8 = 0, worst_f32 = 0;  // Fractions of the allowed error.
  int cases = 0;
  for (const auto& [in, out] : shapes) {
    const Tensor w = *RandomUniform({out, in}, PhiloxState{9, stream++, 0}, -0.1f, 0.1f);
    const Tensor b = *RandomUniform({out}, PhiloxState{9, stream++, 0}, -0.1f, 0.1f);
    const Tensor packed = *PackLinearWeight(w);
    const QuantizedWeight quantized = *QuantizeLinearWeight(w);
    for (int64_t rows : {4, 16, 64, 256}) {
      const Tensor x = *RandomUniform({rows, in}, PhiloxState{9, stream++, 0}, -1.0f, 1.0f);
      const double flops = 2.0 * rows * in * out;
      // The outputs first: timing numbers of a wrong product mean nothing.
      const QuantizationReference reference = QuantizedLinearReference(
          x, w, b, /*relu=*/false, Int8ActivationLevels(ActiveInt8Kernel()));
      double largest = 1e-30;
      for (double y : reference.y) largest = std::max(largest, std::abs(y));
      const std::vector<float> f32_out = PackedLinear(x, packed, out, b)->ToVector<float>();
      for (size_t i = 0; i < f32_out.size(); ++i) {
        worst_f32 = std::max(worst_f32, std::abs(f32_out[i] - reference.y[i]) / (1e-5 * largest));
      }
      for (Int8Kernel kernel : kernels) {
        const int levels = Int8ActivationLevels(kernel);
        const QuantizationReference other_levels =
            levels == Int8ActivationLevels(ActiveInt8Kernel())
                ? QuantizationReference()
                : QuantizedLinearReference(x, w, b, /*relu=*/false, levels);
        worst_int8 = std::max(
            worst_int8, WorstBoundFraction(*QuantizedLinear(x, quantized, b, false, kernel),
                                           other_levels.y.empty() ? reference : other_levels));
      }
      ++cases;
      const double f32 = flops / SecondsPerCall([&] { (void)*PackedLinear(x, packed, out, b); },
                                                seconds) / 1e9;
      std::printf("%-6lld %5lld x %-4lld %10.1f", static_cast<long long>(rows),
                  static_cast<long long>(in), static_cast<long long>(out), f32);
      double active = 0;
      for (Int8Kernel kernel : kernels) {
        if (kernel == Int8Kernel::kScalar) continue;  // The reference: far slower.
        const double gflops =
            flops /
            SecondsPerCall([&] { (void)*QuantizedLinear(x, quantized, b, false, kernel); },
                           seconds) /
            1e9;
        if (kernel == ActiveInt8Kernel()) active = gflops;
        std::printf(" %14.1f", gflops);
      }
      speedups.push_back(active / f32);
      std::printf(" %11.2fx\n", active / f32);
    }
  }
  const bool pass = worst_int8 <= 1.0 && worst_f32 <= 1.0;
  std::printf("\ncheck: %s %d cases x %zu int8 kernels against the double reference: worst "
              "error %.3f of the quantization bound (at most 1); f32 packed_linear worst error "
              "%.3f of 1e-5 x the largest output (at most 1)\n",
              pass ? "PASS" : "FAIL", cases, kernels.size(), worst_int8, worst_f32);
  if (!pass) return 1;
  std::sort(speedups.begin(), speedups.end());
  std::printf("\nint8 (%s) / f32 packed_linear: median %.2fx, range %.2fx .. %.2fx\n",
              Int8KernelName(ActiveInt8Kernel()), speedups[speedups.size() / 2],
              speedups.front(), speedups.back());
  return 0;
}

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!tfm::CheckCpuSupported().ok()) {
    std::fprintf(stderr, "%s\n", tfm::CheckCpuSupported().ToString().c_str());
    return 1;
  }
  return tfm::Main();
}
