// Google Benchmark of the fused attention op (scaled_dot_product_attention),
// forward and forward+backward, in TFLOP/s, and beside it PyTorch's
// torch.nn.functional.scaled_dot_product_attention on the same shapes and
// dtype (benchmarks/attention_torch.py, run once as a peer process).
//
//   bazel run -c opt //benchmarks:attention [-- --peer_python=python3]
//     [--decode_only]
//
// Rows: the paper's shapes (h 8, d_k 64, n 64..1024, 16k tokens per batch,
// key lengths drawn in [3n/4, n] as the padding mask) and long inputs
// (n 4k..16k, 16k tokens, causal and not). The CPU runs the paper's shapes
// in f32; a GPU, when there is one, runs every row in bf16.
//
// FLOPs are counted dense, as FlashAttention's benchmarks count them:
// forward 4 * b * h * n^2 * d (half of it when causal), backward 2.5 times
// the forward (five products against two), so padding rows are credited
// with the work of the whole n x n tile a dense kernel would do.
//
// Before timing, every CUDA row is checked against the CPU op in f32 on the
// same (bf16-rounded) inputs at batch 1, forward and backward; the peer
// computes PyTorch's output on those inputs before it times, and a row
// where it differs from ours fails the run. Each check prints
// `check: PASS` or `check: FAIL`; a failure exits 1.
//
// On a GPU, decode-shaped rows come first (--decode_only: only them): a
// beam search step's forward, one query per row over a cache (self-attention)
// or a beam's 4 rows over their sentence's memory, timed through the decode
// kernel (backend "flash") and the 32-query tiles it replaced
// ("flash_tiles"), and cuDNN in bf16; outputs of the two paths are compared
// before timing.
#include "ops/attention/attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "core/cuda/runtime.h"
#include "core/environment_report.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "ops/random/random.h"
#include "tests/util/npy.h"

ABSL_FLAG(std::string, peer_python, "",
          "Python with PyTorch and a GPU: times torch's SDPA on the CUDA rows (empty: no peer).");
ABSL_FLAG(std::string, peer_script, "",
          "The peer script; defaults to benchmarks/attention_torch.py beside the sources.");
ABSL_FLAG(bool, cpu_rows, true, "Also time the CPU (f32) rows.");
ABSL_FLAG(bool, decode_only, false,
          "Time only the decode-shaped rows (a GPU's decode kernel against the 32-query tiles).");

namespace tfm {
namespace bench {
namespace {

constexpr int kHeads = 8;
constexpr int kHeadDim = 64;
constexpr int kTokensPerBatch = 16384;

struct AttentionCase {
  std::string name;     // e.g. "cuda_bf16_cudnn/n=256_pad"
  std::string shape;    // e.g. "n=256_pad": what the peer times
  std::string backend;  // CUDA: "flash" or "cudnn" (attention_backend.h)
  int batch, len;
  bool causal, padding;
  Device device;
  DType dtype;

  double ForwardFlops() const {
    const double dense = 4.0 * batch * kHeads * static_cast<double>(len) * len * kHeadDim;
    return causal ? dense / 2 : dense;
  }
};

std::vector<AttentionCase> Cases(bool cpu, bool cuda) {
  std::vector<AttentionCase> cases;
  auto add = [&](Device device, DType dtype, int len, bool causal, bool padding) {
    const std::string shape =
        absl::StrCat("n=", len, causal ? "_causal" : "", padding ? "_pad" : "");
    const int batch = kTokensPerBatch / len;
    if (!device.is_cuda()) {
      cases.push_back(
          {absl::StrCat("cpu_f32/", shape), shape, "", batch, len, causal, padding, device, dtype});
      return;
    }
    // Both CUDA back ends, timed in the same run (auto picks cuDNN where it
    // takes the problem).
    for (const char* backend : {"flash", "cudnn"}) {
      cases.push_back({absl::StrCat("cuda_bf16_", backend, "/", shape), shape, backend, batch, len,
                       causal, padding, device, dtype});
    }
  };
  for (int len : {64, 128, 256, 512, 1024}) {
    if (cpu) add(Device::Cpu(), DType::kF32, len, false, true);
    if (cuda) add(Device::Cuda(0), DType::kBF16, len, false, true);
  }
  if (cuda) {
    for (int len : {4096, 8192, 16384}) {
      for (bool causal : {false, true}) add(Device::Cuda(0), DType::kBF16, len, causal, false);
    }
  }
  return cases;
}

// f32 values rounded to `dtype`, so the CPU reference sees what the GPU sees.
Tensor RoundedTo(const Tensor& f32, DType dtype) {
  Tensor out = *Tensor::Empty(f32.shape(), dtype);
  const float* src = f32.data<float>();
  for (int64_t i = 0; i < f32.num_elements(); ++i) {
    if (dtype == DType::kBF16) {
      out.data<BFloat16>()[i] = BFloat16(src[i]);
    } else {
      out.data<float>()[i] = src[i];
    }
  }
  return out;
}

Tensor ToF32(const Tensor& host) {
  if (host.dtype() == DType::kF32) return host;
  Tensor out = *Tensor::Empty(host.shape(), DType::kF32);
  for (int64_t i = 0; i < host.num_elements(); ++i) {
    out.data<float>()[i] = static_cast<float>(host.data<BFloat16>()[i]);
  }
  return out;
}

struct Problem {
  Tensor q, k, v, d_out;  // On the case's device, in its dtype.
  AttentionOptions options;
};

// Random inputs of `c` at `batch` sentences and `heads` heads; `host` gets
// the same values in f32 on the CPU (for the reference) when not null.
absl::StatusOr<Problem> MakeProblem(const AttentionCase& c, int batch, int heads, uint64_t seed,
                                    Problem* host) {
  Problem problem;
  const Shape shape = {batch, heads, c.len, kHeadDim};
  Tensor* device_slots[] = {&problem.q, &problem.k, &problem.v, &problem.d_out};
  for (int i = 0; i < 4; ++i) {
    TFM_ASSIGN_OR_RETURN(Tensor values,
                         RandomNormal(shape, {seed, static_cast<uint64_t>(i), 0}, 0.0f, 1.0f));
    const Tensor rounded = RoundedTo(values, c.dtype);
    TFM_ASSIGN_OR_RETURN(*device_slots[i], CopyToDevice(rounded, c.device));
    if (host != nullptr) {
      Tensor* host_slots[] = {&host->q, &host->k, &host->v, &host->d_out};
      *host_slots[i] = ToF32(rounded);
    }
  }
  problem.options.causal = c.causal;
  problem.options.backend = c.backend;
  if (c.padding) {
    std::vector<int32_t> lengths(batch);
    for (int b = 0; b < batch; ++b) {
      // Deterministic spread over [3n/4, n]; the first sentence is full.
      lengths[b] = c.len - static_cast<int32_t>((b * 2654435761u) % (c.len / 4 + 1));
      if (b == 0) lengths[b] = c.len;
    }
    TFM_ASSIGN_OR_RETURN(Tensor host_lengths, Tensor::FromVector<int32_t>(lengths, {batch}));
    TFM_ASSIGN_OR_RETURN(problem.options.key_lengths, CopyToDevice(host_lengths, c.device));
    if (host != nullptr) host->options.key_lengths = host_lengths;
  }
  if (host != nullptr) host->options.causal = c.causal;
  return problem;
}

double RelativeError(const Tensor& got_device, const Tensor& want_host) {
  const Tensor got = ToF32(*CopyToDevice(got_device, Device::Cpu()));
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double d = static_cast<double>(got.data<float>()[i]) - want_host.data<float>()[i];
    if (std::isnan(d)) return INFINITY;
    diff += d * d;
    norm += static_cast<double>(want_host.data<float>()[i]) * want_host.data<float>()[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

absl::Status Sync(const Device& device) {
  return device.is_cuda() ? cuda::Synchronize(device.index) : absl::OkStatus();
}

// Forward and backward at batch 2 (one full, one padded), 2 heads against the CPU op in f32; the
// bf16 tolerance covers bf16 outputs and bf16 probabilities in P V.
absl::Status CheckAgainstCpu(const AttentionCase& c, const std::string& npy_dir) {
  Problem host;
  TFM_ASSIGN_OR_RETURN(Problem device, MakeProblem(c, 2, 2, 99, &host));
  TFM_ASSIGN_OR_RETURN(AttentionOutput want,
                       ScaledDotProductAttention(host.q, host.k, host.v, host.options));
  TFM_ASSIGN_OR_RETURN(AttentionGrads want_grads,
                       ScaledDotProductAttentionBackward(host.q, host.k, host.v, want.out, want.lse,
                                                         host.d_out, host.options));
  TFM_ASSIGN_OR_RETURN(AttentionOutput got,
                       ScaledDotProductAttention(device.q, device.k, device.v, device.options));
  TFM_ASSIGN_OR_RETURN(AttentionGrads got_grads,
                       ScaledDotProductAttentionBackward(device.q, device.k, device.v, got.out,
                                                         got.lse, device.d_out, device.options));
  const double tolerance = c.dtype == DType::kBF16 ? 2e-2 : 1e-5;
  const std::pair<const char*, double> errors[] = {
      {"out", RelativeError(got.out, want.out)},
      {"lse", RelativeError(got.lse, want.lse)},
      {"dq", RelativeError(got_grads.dq, want_grads.dq)},
      {"dk", RelativeError(got_grads.dk, want_grads.dk)},
      {"dv", RelativeError(got_grads.dv, want_grads.dv)}};
  std::string line = absl::StrCat(c.name, " on CUDA against the CPU (f32):");
  bool ok = true;
  for (const auto& [what, error] : errors) {
    absl::StrAppendFormat(&line, " %s %.1e", what, error);
    ok = ok && error <= tolerance;
  }
  std::cout << "check: " << (ok ? "PASS " : "FAIL ") << line << " (limit " << tolerance << ")"
            << std::endl;
  if (!ok) return absl::InternalError(absl::StrCat(c.name, ": CUDA differs from the CPU"));
  if (!npy_dir.empty() && c.backend == "flash") {
    // The peer checks torch against these (same inputs, our output).
    const std::string base = absl::StrCat(npy_dir, "/", c.shape);
    TFM_RETURN_IF_ERROR(testing::WriteNpy(base + "_q.npy", host.q));
    TFM_RETURN_IF_ERROR(testing::WriteNpy(base + "_k.npy", host.k));
    TFM_RETURN_IF_ERROR(testing::WriteNpy(base + "_v.npy", host.v));
    TFM_RETURN_IF_ERROR(
        testing::WriteNpy(base + "_out.npy", ToF32(*CopyToDevice(got.out, Device::Cpu()))));
  }
  return absl::OkStatus();
}

// Times `repeats` calls between device synchronisations, so launches
// overlap as in training and the host clock sees only finished work.
template <typename Fn>
void TimeCalls(benchmark::State& state, const Device& device, int repeats, Fn fn) {
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; ++r) {
      absl::Status status = fn();
      if (!status.ok()) {
        state.SkipWithError(std::string(status.message()).c_str());
        return;
      }
    }
    if (absl::Status status = Sync(device); !status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      return;
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    state.SetIterationTime(elapsed.count() / repeats);
  }
}

void RunCase(benchmark::State& state, const AttentionCase& c, bool backward) {
  absl::StatusOr<Problem> problem = MakeProblem(c, c.batch, kHeads, 7, nullptr);
  if (!problem.ok()) {
    state.SkipWithError(std::string(problem.status().message()).c_str());
    return;
  }
  const int repeats = c.device.is_cuda() ? 10 : 1;
  TimeCalls(state, c.device, repeats, [&]() -> absl::Status {
    TFM_ASSIGN_OR_RETURN(
        AttentionOutput out,
        ScaledDotProductAttention(problem->q, problem->k, problem->v, problem->options));
    if (backward) {
      TFM_RETURN_IF_ERROR(ScaledDotProductAttentionBackward(problem->q, problem->k, problem->v,
                                                            out.out, out.lse, problem->d_out,
                                                            problem->options)
                              .status());
    }
    return absl::OkStatus();
  });
  const double flops = c.ForwardFlops() * (backward ? 3.5 : 1.0);
  state.counters["TFLOP/s"] = benchmark::Counter(
      flops / 1e12, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// Keeps each run's time per call (ms) for the table against the peer.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (!run.error_occurred) ms_[run.benchmark_name()] = run.GetAdjustedRealTime();
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& ms() const { return ms_; }

 private:
  std::map<std::string, double> ms_;
};

std::string PeerScript(const char* argv0) {
  if (!absl::GetFlag(FLAGS_peer_script).empty()) return absl::GetFlag(FLAGS_peer_script);
  // bazel run: the runfiles; a bundle on the GPU machine: beside the binary.
  for (const std::string& candidate :
       {absl::StrCat(argv0, ".runfiles/transformer/benchmarks/attention_torch.py"),
        absl::StrCat(argv0, "_torch.py")}) {
    if (FILE* f = fopen(candidate.c_str(), "r")) {
      fclose(f);
      return candidate;
    }
  }
  return "benchmarks/attention_torch.py";
}

struct PeerResult {
  double fwd_ms = NAN, fwdbwd_ms = NAN, check = NAN;
  std::string backend;
};

// Runs the peer once over every CUDA case; it prints one line per case:
// "result NAME FWD_MS FWDBWD_MS CHECK_RELERR BACKEND".
absl::StatusOr<std::map<std::string, PeerResult>> RunPeer(const std::vector<AttentionCase>& cases,
                                                          const std::string& script,
                                                          const std::string& npy_dir) {
  std::string spec;
  for (const AttentionCase& c : cases) {
    if (!c.device.is_cuda() || c.backend != "flash") continue;
    absl::StrAppend(&spec, c.shape, ",", c.batch, ",", kHeads, ",", c.len, ",", kHeadDim, ",",
                    c.causal ? 1 : 0, ",", c.padding ? 1 : 0, ";");
  }
  // Without our LD_LIBRARY_PATH: PyTorch brings its own cuDNN, and an older
  // one found first (the CUDA toolkit's, which we link) stops it at import.
  const std::string command =
      absl::StrCat("env -u LD_LIBRARY_PATH ", absl::GetFlag(FLAGS_peer_python), " ", script,
                   " --cases '", spec, "' --npy_dir ", npy_dir);
  std::cout << "peer: " << command << std::endl;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("could not start the peer");
  std::map<std::string, PeerResult> results;
  char line[4096];
  while (fgets(line, sizeof(line), pipe) != nullptr) {
    std::cout << "  peer| " << line << std::flush;
    std::vector<std::string> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \n"), absl::SkipEmpty());
    if (fields.size() == 6 && fields[0] == "result") {
      PeerResult& r = results[fields[1]];
      r.fwd_ms = std::stod(fields[2]);
      r.fwdbwd_ms = std::stod(fields[3]);
      r.check = std::stod(fields[4]);
      r.backend = fields[5];
    }
  }
  const int status = pclose(pipe);
  if (status != 0) return absl::InternalError(absl::StrCat("the peer failed: ", command));
  return results;
}

void PrintTable(const std::vector<AttentionCase>& cases, const std::map<std::string, double>& ms,
                const std::map<std::string, PeerResult>& peer) {
  std::cout << "\n"
            << absl::StrFormat("%-32s %9s %9s %7s %9s %9s %7s %8s  %s\n", "case (h 8, d 64)",
                               "fwd TF/s", "torch", "ratio", "f+b TF/s", "torch", "ratio", "check",
                               "torch back end");
  // Run names carry suffixes ("/min_time:0.200/manual_time"): match the
  // case and mode prefix.
  auto find = [&](const std::string& prefix) {
    auto it = ms.lower_bound(prefix);
    return it != ms.end() && absl::StartsWith(it->first, prefix) ? it->second : NAN;
  };
  for (const AttentionCase& c : cases) {
    if (!c.device.is_cuda()) continue;
    const double fwd = find(absl::StrCat(c.name, "/fwd/"));
    const double both = find(absl::StrCat(c.name, "/fwdbwd/"));
    auto it = peer.find(c.shape);
    const PeerResult p = it == peer.end() ? PeerResult{} : it->second;
    const double f = c.ForwardFlops() / 1e9;  // GFLOP -> TFLOP/s from ms.
    absl::PrintF("%-32s %9.1f %9.1f %7.2f %9.1f %9.1f %7.2f %8.1e  %s\n", c.name, f / fwd,
                 f / p.fwd_ms, p.fwd_ms / fwd, 3.5 * f / both, 3.5 * f / p.fwdbwd_ms,
                 p.fwdbwd_ms / both, p.check, p.backend);
  }
  std::cout << "ratio = torch time / ours (> 1: ours faster); torch uses the faster of its\n"
               "flash back end and its mask-aware back ends (see the peer's lines)\n";
}

// PyTorch's output (its math back end, on the bf16 check inputs) against
// ours on the same inputs, with the CPU check's bf16 limit: a case the peer
// did not report fails as well.
bool CheckPeer(const std::vector<AttentionCase>& cases,
               const std::map<std::string, PeerResult>& peer) {
  constexpr double kTolerance = 2e-2;
  int checked = 0;
  std::string failures;
  for (const AttentionCase& c : cases) {
    if (!c.device.is_cuda() || c.backend != "flash") continue;
    ++checked;
    auto it = peer.find(c.shape);
    const double error = it == peer.end() ? NAN : it->second.check;
    if (!(error <= kTolerance)) absl::StrAppendFormat(&failures, " %s %.1e", c.name, error);
  }
  if (failures.empty()) {
    absl::PrintF("check: PASS (torch's output against ours on the check inputs of %d cases, each "
                 "within %.0e relative)\n",
                 checked, kTolerance);
    return true;
  }
  absl::PrintF("check: FAIL (torch's output differs from ours beyond %.0e, or is missing:%s)\n",
               kTolerance, failures);
  return false;
}

// A decode-shaped row: `batch` items x 8 heads, `q_len` queries each, over
// `keys` keys of a `capacity`-long cache (self-attention: every row at the
// same step) or of memories padded to `keys` (key lengths spread over
// [3 keys / 4, keys]).
struct DecodeRow {
  DType dtype;
  int batch, q_len, keys, capacity;
  bool memory;
};

// `shape` on the GPU in `dtype`, filled with `pool` repeated (drawing 10^8
// normal numbers per row on the host would take longer than the timing).
absl::StatusOr<Tensor> Tiled(const Shape& shape, const std::vector<float>& pool, DType dtype) {
  TFM_ASSIGN_OR_RETURN(Tensor host, Tensor::Empty(shape, dtype));
  for (int64_t i = 0; i < host.num_elements(); ++i) {
    const float x = pool[i % pool.size()];
    if (dtype == DType::kBF16) {
      host.data<BFloat16>()[i] = BFloat16(x);
    } else {
      host.data<float>()[i] = x;
    }
  }
  return CopyToDevice(host, Device::Cuda(0));
}

// Seconds per forward call with `backend`, over enough calls to fill ~50 ms.
absl::StatusOr<double> TimeForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                   AttentionOptions options, const std::string& backend,
                                   Tensor* out) {
  options.backend = backend;
  auto run = [&]() -> absl::Status {
    TFM_ASSIGN_OR_RETURN(AttentionOutput result, ScaledDotProductAttention(q, k, v, options));
    *out = result.out;
    return absl::OkStatus();
  };
  TFM_RETURN_IF_ERROR(run());  // Warm-up: allocator, cuDNN's plan.
  TFM_RETURN_IF_ERROR(Sync(Device::Cuda(0)));
  int calls = 10;
  while (true) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) TFM_RETURN_IF_ERROR(run());
    TFM_RETURN_IF_ERROR(Sync(Device::Cuda(0)));
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    if (elapsed.count() > 0.05 || calls >= 100000) return elapsed.count() / calls;
    calls *= 4;
  }
}

absl::Status TimeDecodeRows() {
  std::vector<DecodeRow> rows;
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    // Self-attention at steps 32 and 1000 of a 1024-step cache; beams of 4
    // over memories of 40 and 300 keys.
    for (int batch : {1, 16, 64, 256}) {
      for (int keys : {32, 1000}) rows.push_back({dtype, batch, 1, keys, 1024, false});
    }
    for (int batch : {1, 16, 64}) {
      for (int keys : {40, 300}) rows.push_back({dtype, batch, 4, keys, keys, true});
    }
  }
  std::vector<float> pool(1 << 20 | 7);
  {
    TFM_ASSIGN_OR_RETURN(Tensor normal,
                         RandomNormal({static_cast<int64_t>(pool.size())}, {5, 0, 0}, 0.0f, 1.0f));
    std::copy(normal.data<float>(), normal.data<float>() + pool.size(), pool.begin());
  }
  std::cout << "\ndecode rows (h 8, d 64, forward): microseconds per call and GB/s of the K and V"
               " read (key lengths only)\n"
            << absl::StrFormat("%-5s %5s %5s %11s %6s  %9s %7s  %9s %7s  %8s  %9s  %s\n", "dtype",
                               "batch", "q_len", "keys/cap", "kind", "decode us", "GB/s",
                               "tiles us", "GB/s", "speed-up", "cudnn us", "check");
  double log_speedup = 0;
  for (const DecodeRow& row : rows) {
    const Shape q_shape = {row.batch, kHeads, row.q_len, kHeadDim};
    const Shape kv_shape = {row.batch, kHeads, row.capacity, kHeadDim};
    TFM_ASSIGN_OR_RETURN(Tensor q, Tiled(q_shape, pool, row.dtype));
    TFM_ASSIGN_OR_RETURN(Tensor k, Tiled(kv_shape, pool, row.dtype));
    std::rotate(pool.begin(), pool.begin() + 12345, pool.end());  // v differs from k.
    TFM_ASSIGN_OR_RETURN(Tensor v, Tiled(kv_shape, pool, row.dtype));
    std::vector<int32_t> lengths(row.batch, row.keys);
    double visible = 0;
    for (int b = 0; b < row.batch; ++b) {
      if (row.memory && b > 0)
        lengths[b] -= static_cast<int32_t>((b * 2654435761u) % (row.keys / 4 + 1));
      visible += lengths[b];
    }
    AttentionOptions options;
    TFM_ASSIGN_OR_RETURN(Tensor host_lengths, Tensor::FromVector<int32_t>(lengths, {row.batch}));
    TFM_ASSIGN_OR_RETURN(options.key_lengths, CopyToDevice(host_lengths, Device::Cuda(0)));
    Tensor decode_out, tiles_out, cudnn_out;
    TFM_ASSIGN_OR_RETURN(const double decode_s,
                         TimeForward(q, k, v, options, "flash", &decode_out));
    TFM_ASSIGN_OR_RETURN(const double tiles_s,
                         TimeForward(q, k, v, options, "flash_tiles", &tiles_out));
    double cudnn_s = NAN;
    if (row.dtype == DType::kBF16) {
      TFM_ASSIGN_OR_RETURN(cudnn_s, TimeForward(q, k, v, options, "cudnn", &cudnn_out));
    }
    const double error = RelativeError(decode_out, ToF32(*CopyToDevice(tiles_out, Device::Cpu())));
    // bf16: the tiles round P to bf16 on the tensor cores, the decode kernel does not.
    const double tolerance = row.dtype == DType::kBF16 ? 2e-2 : 1e-5;
    const double gb = 2.0 * visible * kHeads * kHeadDim * DTypeSize(row.dtype) / 1e9;
    log_speedup += std::log(tiles_s / decode_s);
    absl::PrintF("%-5s %5d %5d %5d/%-5d %6s  %9.1f %7.0f  %9.1f %7.0f  %8.2f  %9.1f  %.1e %s\n",
                 DTypeName(row.dtype), row.batch, row.q_len, row.keys, row.capacity,
                 row.memory ? "memory" : "self", decode_s * 1e6, gb / decode_s, tiles_s * 1e6,
                 gb / tiles_s, tiles_s / decode_s, cudnn_s * 1e6, error,
                 error <= tolerance ? "ok" : "MISMATCH");
    if (!(error <= tolerance)) {
      std::cout << "check: FAIL (the decode kernel's output differs from the 32-query tiles' by "
                << error << ", limit " << tolerance << ")\n";
      return absl::InternalError("the decode kernel differs from the 32-query tiles");
    }
  }
  absl::PrintF(
      "check: PASS (the decode kernel's output against the 32-query tiles' on each of the %d "
      "rows: within 2e-2 relative in bf16, 1e-5 in f32)\n",
      rows.size());
  absl::PrintF(
      "speed-up = tiles time / decode time; cudnn: cuDNN where it takes the problem, else the "
      "decode kernel\ndecode kernel vs 32-query tiles (geometric mean over %d rows): %.2fx\n",
      rows.size(), std::exp(log_speedup / rows.size()));
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  std::cout << "scaled_dot_product_attention benchmark\n";
  for (const auto& [label, text] : EnvironmentReport()) std::cout << label << ": " << text << "\n";
  const bool cuda = cuda::DeviceCount() > 0;
  if (cuda)
    std::cout << "gpu: " << cuda::DeviceName(0).value_or("?") << "; " << cuda::LibraryVersions()
              << "\n";
  else
    std::cout << "gpu: none (CPU rows only)\n";
  if (cuda) {
    if (absl::Status status = TimeDecodeRows(); !status.ok()) {
      std::cerr << "attention: " << status << "\n";
      return 1;
    }
  }
  if (absl::GetFlag(FLAGS_decode_only)) return 0;
  const std::vector<AttentionCase> cases = Cases(absl::GetFlag(FLAGS_cpu_rows), cuda);

  const bool peer = cuda && !absl::GetFlag(FLAGS_peer_python).empty();
  char npy_template[] = "/tmp/tfm_attention_XXXXXX";
  const std::string npy_dir = peer ? mkdtemp(npy_template) : "";
  for (const AttentionCase& c : cases) {
    if (!c.device.is_cuda()) continue;
    if (absl::Status status = CheckAgainstCpu(c, npy_dir); !status.ok()) {
      std::cerr << "attention: " << status << "\n";
      return 1;
    }
  }
  for (const AttentionCase& c : cases) {
    for (bool backward : {false, true}) {
      benchmark::RegisterBenchmark(absl::StrCat(c.name, backward ? "/fwdbwd" : "/fwd").c_str(),
                                   RunCase, c, backward)
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime()
          ->MinTime(c.device.is_cuda() ? 0.2 : 0.5);
    }
  }
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  if (peer) {
    absl::StatusOr<std::map<std::string, PeerResult>> results =
        RunPeer(cases, PeerScript(argv[0]), npy_dir);
    if (!results.ok()) {
      std::cerr << "attention: " << results.status() << "\n";
      return 1;
    }
    PrintTable(cases, reporter.ms(), *results);
    // After the table, so that a failing run still shows every figure.
    if (!CheckPeer(cases, *results)) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace tfm

int main(int argc, char** argv) { return tfm::bench::Main(argc, argv); }
