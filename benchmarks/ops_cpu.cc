// Google Benchmark of every CPU op, forward and backward, at the base
// model's shapes (benchmarks/op_cases.h), with token, byte and FLOP rates.
//
//   bazel run -c opt //benchmarks:ops_cpu [-- --benchmark_filter=attention]
//
// Threads: TFM_NUM_THREADS (our pool) and OPENBLAS_NUM_THREADS, else one per
// core each.
#include <algorithm>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmark/benchmark.h"
#include "benchmarks/op_cases.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"

namespace tfm {
namespace bench {
namespace {

void RunCase(benchmark::State& state, const OpCase& op_case) {
  absl::StatusOr<Prepared> prepared = op_case.prepare();
  if (!prepared.ok()) {
    state.SkipWithError(std::string(prepared.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    const absl::Status status = prepared->run().status();
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
  }
  if (op_case.tokens > 0) state.SetItemsProcessed(state.iterations() * op_case.tokens);
  if (op_case.bytes > 0) state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * op_case.bytes));
  if (op_case.flops > 0) {
    state.counters["FLOP/s"] =
        benchmark::Counter(op_case.flops, benchmark::Counter::kIsIterationInvariantRate,
                           benchmark::Counter::kIs1000);
  }
}

void RegisterAll() {
  CaseOptions options;  // The base model's 37000-entry vocabulary.
  // Both batch layouts of ~4k tokens: 128 sentences of 32 and 32 of 128,
  // plus longer sequences for attention's quadratic part.
  options.attention_lengths = {32, 64, 128, 256, 1024};
  std::vector<OpCase> cases = BaseModelCases(options);
  cases.push_back(SgemmCase());
  for (const OpCase& op_case : cases) {
    // Names may not hold spaces for --benchmark_filter to be comfortable.
    const std::string name = absl::StrReplaceAll(
        absl::StrCat(op_case.op, "/", op_case.shape), {{" -> ", "->"}, {" ", "_"}});
    benchmark::RegisterBenchmark(name.c_str(), RunCase, op_case)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();  // The work runs on pool and BLAS threads.
  }
  benchmark::AddCustomContext("tfm_threads", absl::StrCat(ThreadPool::Default()->num_threads()));
  benchmark::AddCustomContext("blas", BlasKernelSummary());
  benchmark::AddCustomContext("vocab", absl::StrCat(options.vocab));
}

}  // namespace
}  // namespace bench
}  // namespace tfm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  tfm::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
