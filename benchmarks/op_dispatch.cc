// What one op call costs the host besides its kernel's arithmetic: the
// registry lookups, validation, shape functions, output allocation and the
// aliasing check of RunOp (core/op_registry.h), timed on tensors of a few
// elements so that the kernels' own work is negligible.
//
//   bazel run -c opt //benchmarks:op_dispatch
//
// On a GPU the same host path runs before every kernel launch, so where a
// model is launch-bound (a small model's training update, batch-1 decoding
// without CUDA graphs) this cost adds to the launch's own few microseconds.
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "core/environment_report.h"
#include "core/tensor.h"
#include "ops/add/add.h"
#include "ops/layer_norm/layer_norm.h"
#include "ops/relu/relu.h"

namespace tfm {
namespace {

Tensor Filled(const Shape& shape, float value) {
  Tensor t = Tensor::Empty(shape, DType::kF32).value();
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = value;
  return t;
}

// Times `call` (an op call returning StatusOr of its outputs); `first`
// picks a tensor of them to keep the result alive.
template <typename Call, typename First>
void TimeOpCall(benchmark::State& state, Call call, First first) {
  for (auto _ : state) {
    auto out = call();
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(first(*out).template data<float>());
  }
}

void BM_Add(benchmark::State& state) {
  const Tensor a = Filled({2, 4}, 1.0f), b = Filled({4}, 2.0f);
  TimeOpCall(state, [&] { return Add(a, b); }, [](const Tensor& t) -> const Tensor& { return t; });
}
BENCHMARK(BM_Add);

void BM_Relu(benchmark::State& state) {
  const Tensor x = Filled({2, 4}, -1.0f);
  TimeOpCall(state, [&] { return Relu(x); }, [](const Tensor& t) -> const Tensor& { return t; });
}
BENCHMARK(BM_Relu);

// Three outputs and a shape function.
void BM_LayerNorm(benchmark::State& state) {
  const Tensor x = Filled({2, 8}, 0.5f), gain = Filled({8}, 1.0f), bias = Filled({8}, 0.0f);
  TimeOpCall(
      state, [&] { return LayerNorm(x, gain, bias); },
      [](const LayerNormOutputs& out) -> const Tensor& { return out.out; });
}
BENCHMARK(BM_LayerNorm);

}  // namespace
}  // namespace tfm

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (const auto& [label, text] : tfm::EnvironmentReport()) {
    benchmark::AddCustomContext(label, text);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
