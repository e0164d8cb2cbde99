// Times our ops and the same ops in PyTorch in one run and prints one
// comparison table: on the CPU (the default) with the same number of threads
// on both sides, or on a GPU with --device=cuda (f32 and bf16 rows), where
// PyTorch runs on the same GPU.
//
//   bazel run -c opt //benchmarks:ops_vs_torch [-- --threads=2 --peer_python=...]
//   .device_bundle/run_bundle.sh benchmarks/ops_vs_torch --device=cuda --peer_python=python3
//
// The PyTorch side runs in the bench venv's interpreter (tools/setup_bench.sh)
// with benchmarks/torch_ops.py, which receives the cases as JSON lines; the
// two sides take turns case by case.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/device_peak.h"
#include "benchmarks/machine_peak.h"
#include "benchmarks/op_cases.h"
#include "benchmarks/output_check.h"
#include "benchmarks/peer_table.h"
#include "benchmarks/torch_peer.h"
#include "core/allocator.h"
#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/npy.h"
#include "tests/util/shell_quote.h"
#include "tools/cpp/runfiles/runfiles.h"

ABSL_FLAG(int, threads, static_cast<int>(std::thread::hardware_concurrency()),
          "Threads for both sides: our ThreadPool and OpenBLAS, torch.set_num_threads.");
ABSL_FLAG(std::string, peer_python, "/opt/transformer-bench-venv/bin/python3",
          "Python with PyTorch (tools/setup_bench.sh creates it).");
ABSL_FLAG(std::string, torch_script, "",
          "The peer script; defaults to benchmarks/torch_ops.py from the runfiles.");
ABSL_FLAG(int64_t, vocab, 37000,
          "Vocabulary of the tied projection, embedding and cross-entropy cases (the "
          "paper's shared EN-DE BPE vocabulary).");
ABSL_FLAG(double, budget_s, 0.25, "Target timed seconds per case, side and pass.");
ABSL_FLAG(int, passes, 3, "Passes over all cases; the table shows the median and spread.");
ABSL_FLAG(std::string, caching_malloc, "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
          "A caching malloc preloaded into a second PyTorch peer (tools/setup_bench.sh "
          "installs jemalloc); empty: run PyTorch with glibc's malloc only.");
ABSL_FLAG(int, min_reps, 5, "At least this many timed calls per case.");
ABSL_FLAG(int, max_reps, 200, "At most this many timed calls per case.");
ABSL_FLAG(std::string, device, "cpu",
          "cpu, or cuda (GPU 0; PyTorch on the same GPU): where both sides run.");
ABSL_FLAG(std::string, dtype, "",
          "Comma-separated dtypes of the rows: f32 (the CPU's only one) and, on CUDA, bf16. "
          "Empty: f32 on the CPU, f32,bf16 on CUDA (bf16 rows for every op with a bf16 kernel).");
ABSL_FLAG(std::string, filter, "",
          "Run only the cases whose op or shape contains this text (e.g. attention); the "
          "sgemm reference always runs.");

namespace tfm {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Calls per timing: enough for about --budget_s, within --min_reps..--max_reps.
int Repetitions(double first_call_seconds) {
  return std::clamp(static_cast<int>(std::ceil(absl::GetFlag(FLAGS_budget_s) /
                                               std::max(first_call_seconds, 1e-9))),
                    absl::GetFlag(FLAGS_min_reps), absl::GetFlag(FLAGS_max_reps));
}

// Two warm-up calls (the second sizes the repetitions), then the median of
// the timed calls: the same policy as median_ms in torch_ops.py.
absl::StatusOr<double> TimeMedianMs(const Run& body) {
  TFM_RETURN_IF_ERROR(body().status());
  Clock::time_point start = Clock::now();
  TFM_RETURN_IF_ERROR(body().status());
  const int reps = Repetitions(Seconds(Clock::now() - start));
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    start = Clock::now();
    TFM_RETURN_IF_ERROR(body().status());
    times.push_back(Seconds(Clock::now() - start));
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  double median = times[reps / 2];
  if (reps % 2 == 0) {
    median = (median + *std::max_element(times.begin(), times.begin() + reps / 2)) / 2;
  }
  return median * 1e3;
}

// On a GPU: two warm-up calls, one synchronised call to size the
// repetitions, then that many calls back to back and one synchronisation,
// so launches overlap as in training and the clock sees finished work; the
// mean per call. The same policy as cuda_ms in torch_ops.py.
absl::StatusOr<double> TimeDeviceMs(const Run& body, const Device& device) {
  TFM_RETURN_IF_ERROR(body().status());
  TFM_RETURN_IF_ERROR(body().status());
  TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
  Clock::time_point start = Clock::now();
  TFM_RETURN_IF_ERROR(body().status());
  TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
  const int reps = Repetitions(Seconds(Clock::now() - start));
  start = Clock::now();
  for (int i = 0; i < reps; ++i) TFM_RETURN_IF_ERROR(body().status());
  TFM_RETURN_IF_ERROR(cuda::Synchronize(device.index));
  return Seconds(Clock::now() - start) / reps * 1e3;
}

using ::tfm::testing::ShellQuote;

// The CPU's brand string from CPUID (what /proc/cpuinfo calls "model name").
const std::string& CpuModel() { return HostCpuFeatures().brand; }

// --torch_script, else torch_ops.py in the runfiles directory (a bundle on
// the GPU machine keeps it, but its MANIFEST names this machine's paths),
// else the runfiles library's answer.
absl::StatusOr<std::string> TorchScript(const char* argv0) {
  if (!absl::GetFlag(FLAGS_torch_script).empty()) return absl::GetFlag(FLAGS_torch_script);
  const std::string beside = absl::StrCat(argv0, ".runfiles/transformer/benchmarks/torch_ops.py");
  if (access(beside.c_str(), R_OK) == 0) return beside;
  std::string error;
  std::unique_ptr<bazel::tools::cpp::runfiles::Runfiles> runfiles(
      bazel::tools::cpp::runfiles::Runfiles::Create(argv0, &error));
  if (runfiles == nullptr) {
    return absl::NotFoundError(absl::StrCat("runfiles: ", error, "; pass --torch_script"));
  }
  return runfiles->Rlocation("transformer/benchmarks/torch_ops.py");
}

// The case's inputs as <dir>/<name>.npy, for the peers.
absl::Status WriteInputs(const std::vector<NamedTensor>& inputs, const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", dir));
  }
  for (const NamedTensor& input : inputs) {
    TFM_RETURN_IF_ERROR(
        testing::WriteNpy(absl::StrCat(dir, "/", input.name, ".npy"), input.tensor));
  }
  return absl::OkStatus();
}

// Reads and removes the peer's <dir>/out_<i>.npy, i = 0, 1, ...
std::vector<Tensor> TakeTorchOutputs(const std::string& dir) {
  std::vector<Tensor> outputs;
  for (int i = 0;; ++i) {
    const std::string path = absl::StrCat(dir, "/out_", i, ".npy");
    absl::StatusOr<Tensor> tensor = testing::ReadNpy(path);
    if (!tensor.ok()) break;
    outputs.push_back(*std::move(tensor));
    unlink(path.c_str());
  }
  return outputs;
}

// On the CPU the request the peer has always had; on a GPU it also names
// the device and the dtype the peer moves the inputs to.
std::string Request(int index, const OpCase& c, const std::string& dir, bool save_outputs,
                    const Device& device) {
  const std::string placement =
      device.is_cuda() ? absl::StrFormat(R"(, "device": "cuda", "dtype": "%s")", DTypeName(c.dtype))
                       : std::string();
  return absl::StrFormat(R"({"index": %d, "spec": %s, "inputs": "%s", "save_outputs": %s%s})",
                         index, c.torch_spec, dir, save_outputs ? "true" : "false", placement);
}

// What a row's time is held against: GEMM rows a compute peak (GFLOP/s),
// memory-bound rows a copy bandwidth (GB/s); 0 where unknown.
struct Limits {
  double gemm_gflops = 0;
  double copy_gb_per_s = 0;
};

double PeakFraction(const OpCase& c, double ms, const Limits& limits) {
  switch (c.bound) {
    case Bound::kGemm:
      return limits.gemm_gflops > 0 ? c.flops / (ms * 1e-3) / 1e9 / limits.gemm_gflops : -1;
    case Bound::kMemory:
      return limits.copy_gb_per_s > 0 ? c.bytes / (ms * 1e-3) / 1e9 / limits.copy_gb_per_s : -1;
    case Bound::kOther:
      break;
  }
  return -1;
}

bool UseTf32() {
  const char* value = std::getenv("TFM_CUDA_TF32");
  return value != nullptr && std::string(value) == "1";
}

absl::StatusOr<std::vector<DType>> Dtypes(const Device& device) {
  std::string text = absl::GetFlag(FLAGS_dtype);
  if (text.empty()) text = device.is_cuda() ? "f32,bf16" : "f32";
  std::vector<DType> dtypes;
  for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    if (name == "f32") {
      dtypes.push_back(DType::kF32);
    } else if (name == "bf16" && device.is_cuda()) {
      dtypes.push_back(DType::kBF16);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dtype=", text, ": '", name, "' is not one of f32", device.is_cuda() ? ", bf16" : "",
          device.is_cuda() ? "" : " (bf16 rows run only with --device=cuda)"));
    }
  }
  if (dtypes.empty()) return absl::InvalidArgumentError("--dtype names no dtype");
  return dtypes;
}

// The table's cases: on the CPU the base model's rows; on a GPU the same
// without attention (benchmarks/attention.cc times it against SDPA) and with
// the gradient-norm rows, once per dtype.
std::vector<OpCase> TableCases(const Device& device, const std::vector<DType>& dtypes) {
  std::vector<OpCase> cases;
  for (DType dtype : dtypes) {
    CaseOptions options;
    options.vocab = absl::GetFlag(FLAGS_vocab);
    options.device = device;
    options.dtype = dtype;
    if (device.is_cuda()) {
      options.attention_lengths.clear();
      options.causal_attention_length = 0;
      options.decode_cache_lengths.clear();
      options.grad_norm_cases = true;
    }
    for (OpCase& c : BaseModelCases(options)) cases.push_back(std::move(c));
  }
  const std::string filter = absl::GetFlag(FLAGS_filter);
  cases.erase(std::remove_if(cases.begin(), cases.end(),
                             [&](const OpCase& c) {
                               return !absl::StrContains(c.op, filter) &&
                                      !absl::StrContains(c.shape, filter);
                             }),
              cases.end());
  return cases;
}

// The PyTorch peers: `torch` on glibc's malloc, `cached` (CPU only, when
// --caching_malloc names one) with it preloaded.
struct Peers {
  std::unique_ptr<Peer> torch;
  std::unique_ptr<Peer> cached;
};

absl::StatusOr<Peers> StartPeers(const std::string& script, const Device& device) {
  // Without our LD_LIBRARY_PATH (the GPU bundle's): PyTorch brings its own
  // CUDA libraries, and older ones found first stop it at import.
  std::string peer_command =
      absl::StrCat("env -u LD_LIBRARY_PATH ", ShellQuote(absl::GetFlag(FLAGS_peer_python)), " ",
                   ShellQuote(script), " --threads ", absl::GetFlag(FLAGS_threads), " --budget_s ",
                   absl::GetFlag(FLAGS_budget_s), " --min_reps ", absl::GetFlag(FLAGS_min_reps),
                   " --max_reps ", absl::GetFlag(FLAGS_max_reps));
  if (device.is_cuda())
    absl::StrAppend(&peer_command, " --device cuda", UseTf32() ? " --tf32" : "");
  Peers peers;
  TFM_ASSIGN_OR_RETURN(peers.torch, Peer::Start(peer_command));
  TFM_RETURN_IF_ERROR(peers.torch->WaitReady());
  const std::string malloc_path = absl::GetFlag(FLAGS_caching_malloc);
  // On a GPU PyTorch's tensors come from its own caching allocator.
  if (malloc_path.empty() || device.is_cuda()) return peers;
  if (access(malloc_path.c_str(), R_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("no caching malloc at ", malloc_path,
                     ": run `sudo tools/setup_bench.sh` (installs "
                     "libjemalloc2) or pass --caching_malloc= to skip the second PyTorch run"));
  }
  TFM_ASSIGN_OR_RETURN(
      peers.cached,
      Peer::Start(absl::StrCat("LD_PRELOAD=", ShellQuote(malloc_path), " ", peer_command)));
  TFM_RETURN_IF_ERROR(peers.cached->WaitReady());
  return peers;
}

struct Measured {
  std::vector<TableRow> rows;  // One per case, in order.
  std::vector<std::string> mismatches;
  PeerReport peer;
};

// Pass by pass, case by case: PyTorch (pass 0: computing its outputs for
// the check first), ours, PyTorch with the caching malloc, so load that
// comes and goes on a shared machine hits all of them alike.
absl::StatusOr<Measured> RunPasses(const std::vector<OpCase>& cases, const Device& device,
                                   Peers peers) {
  char dir_template[] = "/tmp/ops_vs_torch.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string files = dir_template;
  const int n = static_cast<int>(cases.size());
  const int passes = absl::GetFlag(FLAGS_passes);
  Measured measured;
  measured.rows.resize(n);
  for (TableRow& row : measured.rows) {
    row.ours.keep_fastest = row.torch.keep_fastest = device.is_cuda();
  }
  for (int pass = 0; pass < passes; ++pass) {
    for (int i = 0; i < n; ++i) {
      const OpCase& c = cases[i];
      TableRow& row = measured.rows[i];
      const std::string dir = absl::StrCat(files, "/case_", i);
      const int index = pass * n + i;
      TFM_ASSIGN_OR_RETURN(Prepared prepared, c.prepare());
      const bool with_torch = !c.torch_spec.empty();
      if (with_torch) {
        const bool check = pass == 0;
        std::vector<Tensor> ours_outputs;
        if (check) {
          TFM_RETURN_IF_ERROR(WriteInputs(prepared.inputs, dir));
          TFM_ASSIGN_OR_RETURN(ours_outputs, prepared.run());
          // Host f32 copies now: a later call may update them in place (Adam).
          if (device.is_cuda()) {
            for (Tensor& output : ours_outputs) output = testing::HostF32(output);
          }
        }
        TFM_ASSIGN_OR_RETURN(double ms,
                             peers.torch->Time(index, Request(index, c, dir, check, device)));
        row.torch.ms.push_back(ms);
        if (check) {
          const absl::Status agree =
              CheckOutputs(c, prepared.inputs, ours_outputs, TakeTorchOutputs(dir));
          row.outputs_match = agree.ok();
          if (!agree.ok()) {
            measured.mismatches.push_back(absl::StrCat(
                c.op, " ", device.is_cuda() ? absl::StrCat(DTypeName(c.dtype), " ") : "", c.shape,
                ": ", agree.message()));
          }
        }
      }
      TFM_ASSIGN_OR_RETURN(double ours_ms, device.is_cuda() ? TimeDeviceMs(prepared.run, device)
                                                            : TimeMedianMs(prepared.run));
      row.ours.ms.push_back(ours_ms);
      prepared = Prepared{};  // Frees our inputs before a peer allocates its own.
      if (with_torch && peers.cached != nullptr) {
        TFM_ASSIGN_OR_RETURN(double ms,
                             peers.cached->Time(index, Request(index, c, dir, false, device)));
        row.torch_cached.ms.push_back(ms);
      }
      std::cerr << absl::StrFormat("  pass %d  %s %s %s: ours %.3f ms\n", pass, c.op,
                                   DTypeName(c.dtype), c.shape, ours_ms);
    }
  }
  TFM_ASSIGN_OR_RETURN(measured.peer, peers.torch->Report());
  std::filesystem::remove_all(files);
  return measured;
}

// The table's rows (reference rows and our own alternatives left out), each
// held against `limits_of(case)`; the alternatives as text.
template <typename LimitsOf>
std::vector<TableRow> TableRows(const std::vector<OpCase>& cases, int table_cases,
                                std::vector<TableRow>& rows, const LimitsOf& limits_of,
                                bool show_dtype, std::string* alternatives) {
  std::vector<TableRow> table;
  for (int i = 0; i < table_cases; ++i) {
    const OpCase& c = cases[i];
    TableRow& row = rows[i];
    row.op = c.op;
    row.shape = c.shape;
    row.group = c.group;
    row.bound = c.bound;
    row.dtype = std::string(DTypeName(c.dtype));
    row.flops = c.flops;
    row.bytes = c.bytes;
    row.peak_fraction = PeakFraction(c, row.ours.Kept(), limits_of(c));
    if (c.own_baseline.empty()) {
      table.push_back(row);
      continue;
    }
    for (int j = 0; j < table_cases; ++j) {
      if (absl::StrCat(cases[j].op, " ", cases[j].shape) != c.own_baseline ||
          cases[j].dtype != c.dtype) {
        continue;
      }
      absl::StrAppendFormat(alternatives, "  %s %s%s: %.3f ms (+-%.0f%%) against our %s: %.3f ms\n",
                            c.op, show_dtype ? row.dtype + " " : "", c.shape, row.ours.Kept(),
                            100 * row.ours.Spread(), c.own_baseline, rows[j].ours.Kept());
    }
  }
  return table;
}

// The alternatives, then the verdict of the output checks: every row with a
// PyTorch side must agree with it (a row that does not would otherwise
// simply drop out of the headline), so a mismatch fails the run.
absl::Status PrintTail(const std::string& alternatives, const std::vector<std::string>& mismatches,
                       int checked_rows) {
  if (!alternatives.empty()) {
    std::cout << "\nour own alternatives (different work than PyTorch's, so no ratio):\n"
              << alternatives;
  }
  if (mismatches.empty()) {
    std::cout << "\ncheck: PASS (the outputs of all " << checked_rows
              << " rows with a PyTorch side agree with PyTorch's)\n";
    return absl::OkStatus();
  }
  std::cout << "\noutputs that differ from PyTorch's (no ratio shown):\n";
  for (const std::string& m : mismatches) std::cout << "  " << m << "\n";
  std::cout << "check: FAIL (" << mismatches.size() << " of " << checked_rows
            << " rows differ from PyTorch)\n";
  return absl::FailedPreconditionError(
      absl::StrCat(mismatches.size(), " rows' outputs differ from PyTorch's (listed above)"));
}

// Rows that PyTorch computes too (their outputs are checked).
int CheckedRows(const std::vector<OpCase>& cases) {
  int rows = 0;
  for (const OpCase& c : cases) rows += c.torch_spec.empty() ? 0 : 1;
  return rows;
}

absl::Status MainCpu(const std::string& script) {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (BlasUsesGenericKernels()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the BLAS runs generic kernels on this CPU, so every GEMM row would be meaningless: ",
        BlasKernelSummary()));
  }
  if (ThreadPool::Default()->num_threads() != threads) {
    return absl::InternalError("the thread pool was created before --threads took effect");
  }
  std::vector<OpCase> cases = TableCases(Device::Cpu(), {DType::kF32});
  const int table_cases = static_cast<int>(cases.size());
  cases.push_back(SgemmCase());  // Last: reported beside the table, not in it.
  const int n = table_cases + 1;

  std::cerr << "measuring the machine's FMA peak and copy bandwidth\n";
  const MachinePeak peak = MeasureMachinePeak();
  TFM_ASSIGN_OR_RETURN(Peers peers, StartPeers(script, Device::Cpu()));
  const bool with_cached = peers.cached != nullptr;
  TFM_ASSIGN_OR_RETURN(Measured measured, RunPasses(cases, Device::Cpu(), std::move(peers)));

  std::string alternatives;
  const Limits limits{peak.FmaPeakGflops(), peak.copy_gb_per_s};
  const std::vector<TableRow> table = TableRows(
      cases, table_cases, measured.rows, [&](const OpCase&) { return limits; }, false,
      &alternatives);
  const TableRow& sgemm = measured.rows[n - 1];
  const auto gflops = [&](double ms) { return cases[n - 1].flops / (ms * 1e-3) / 1e9; };
  PeerReport& peer = measured.peer;

  std::cout << absl::StrFormat("machine: %s, nproc %d; threads %d on both sides\n", CpuModel(),
                               std::thread::hardware_concurrency(), threads);
  std::cout << "ours:  ISA " << CpuSummary() << "\n";
  std::cout << "       BLAS " << BlasKernelSummary() << "\n";
  std::cout << absl::StrFormat(
      "       threads: ThreadPool %d (BLAS single-threaded under it); "
      "allocator: %s\n",
      ThreadPool::Default()->num_threads(), CpuAllocatorSummary());
  std::cout << absl::StrFormat(
      "torch: %s, ISA (cpu capability) %s, BLAS %s, mkldnn %s, threads %s\n",
      peer.info["torch_version"], peer.info["cpu_capability"], peer.info["blas_info"],
      peer.info["mkldnn"], peer.info["threads"]);
  const std::string malloc_path = absl::GetFlag(FLAGS_caching_malloc);
  std::cout << absl::StrFormat(
      "       allocator: glibc malloc (torch_ms)%s\n",
      !with_cached && malloc_path.empty()
          ? std::string()
          : absl::StrCat(" and ", malloc_path,
                         " preloaded (torch_je); torch/ours uses the faster"));
  std::cout << "peak:  " << peak.Summary() << "\n";
  std::cout << absl::StrFormat(
      "sgemm %s fp32 GFLOP/s: ours %.1f (%.0f%% of FMA peak), torch %.1f; outputs %s\n",
      cases[n - 1].shape, gflops(sgemm.ours.Median()),
      100 * gflops(sgemm.ours.Median()) / peak.FmaPeakGflops(), gflops(sgemm.TorchMs()),
      sgemm.outputs_match ? "agree" : "DIFFER");
  std::cout << absl::StrFormat(
      "%d passes; each: median of repeated calls after 2 warm-ups (%.2f s per case, %d..%d "
      "calls); +- = (max - min) / median over the passes; vocab %d; inputs identical on both "
      "sides, outputs checked before timing\n\n",
      absl::GetFlag(FLAGS_passes), absl::GetFlag(FLAGS_budget_s), absl::GetFlag(FLAGS_min_reps),
      absl::GetFlag(FLAGS_max_reps), absl::GetFlag(FLAGS_vocab));
  std::cout << FormatTable(table);
  return PrintTail(alternatives, measured.mismatches, CheckedRows(cases));
}

absl::Status MainCuda(const std::string& script, const Device& device) {
  if (cuda::DeviceCount() <= device.index) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device=", device.ToString(), ": no CUDA device",
                     cuda::BuiltWithCuda() ? " visible on this machine"
                                           : " (this binary was built without CUDA)"));
  }
  TFM_ASSIGN_OR_RETURN(const std::vector<DType> dtypes, Dtypes(device));
  std::vector<OpCase> cases = TableCases(device, dtypes);
  const int table_cases = static_cast<int>(cases.size());
  // Last: the large-GEMM references, one per dtype, beside the table.
  for (DType dtype : dtypes) {
    CaseOptions options;
    options.device = device;
    options.dtype = dtype;
    cases.push_back(DeviceGemmCase(options));
  }

  const std::string smi_before = NvidiaSmiSummary();
  std::cerr << "measuring the GPU's copy bandwidth\n";
  TFM_ASSIGN_OR_RETURN(const DevicePeak peak, MeasureDevicePeak(device.index));
  TFM_ASSIGN_OR_RETURN(Peers peers, StartPeers(script, device));
  TFM_ASSIGN_OR_RETURN(Measured measured, RunPasses(cases, device, std::move(peers)));

  const bool tf32 = UseTf32();
  const auto limits_of = [&](const OpCase& c) {
    return Limits{peak.GemmPeakGflops(c.dtype, tf32), peak.copy_gb_per_s};
  };
  std::string alternatives;
  const std::vector<TableRow> table =
      TableRows(cases, table_cases, measured.rows, limits_of, true, &alternatives);
  PeerReport& peer = measured.peer;
  const cuda::DeviceInfo& info = peak.info;

  std::cout << absl::StrFormat(
      "gpu:   %s, sm_%d, %d SMs, max SM clock %d MHz, memory clock %d MHz, %d-bit bus, "
      "%.1f GiB; CUDA driver API %d\n",
      info.name, info.compute_capability, info.sm_count, info.max_sm_clock_mhz,
      info.max_memory_clock_mhz, info.memory_bus_bits, info.memory_bytes / double(1 << 30),
      info.driver_api_version);
  std::cout << "before the run:\n" << smi_before << "after the run:\n" << NvidiaSmiSummary();
  std::cout << "host:  " << CpuModel() << ", nproc " << std::thread::hardware_concurrency() << "\n";
  std::cout << "ours:  " << cuda::LibraryVersions() << "; f32 GEMMs "
            << (tf32 ? "on TF32 tensor cores (TFM_CUDA_TF32=1)" : "exact (CUBLAS_COMPUTE_32F)")
            << ", bf16 GEMMs on tensor cores with f32 accumulation; caching allocator\n";
  std::cout << absl::StrFormat(
      "torch: %s (CUDA %s, cuDNN %s) on %s; allow_tf32 matmul %s; caching allocator\n",
      peer.info["torch_version"], peer.info["torch_cuda"], peer.info["torch_cudnn"],
      peer.info["device_name"], peer.info["allow_tf32"]);
  std::cout << "peak:  " << peak.Summary() << "\n";
  for (int i = table_cases; i < static_cast<int>(cases.size()); ++i) {
    const TableRow& gemm = measured.rows[i];
    const auto tflops = [&](double ms) { return cases[i].flops / ms / 1e9; };
    const double gemm_peak = peak.GemmPeakGflops(cases[i].dtype, tf32) / 1e3;
    std::cout << absl::StrFormat(
        "gemm %s %s TFLOP/s: ours %.1f (%s of the stated peak), torch %.1f; outputs %s\n",
        cases[i].shape, DTypeName(cases[i].dtype), tflops(gemm.ours.Kept()),
        gemm_peak > 0 ? absl::StrFormat("%.0f%%", 100 * tflops(gemm.ours.Kept()) / gemm_peak)
                      : std::string("-"),
        tflops(gemm.TorchMs()), gemm.outputs_match ? "agree" : "DIFFER");
  }
  std::cout << absl::StrFormat(
      "%d passes; each: 2 warm-ups, then %d..%d calls (about %.2f s) back to back between two "
      "device synchronisations, the mean per call; the table keeps the fastest pass, +- = "
      "(max - min) / fastest; vocab %d; inputs identical on both sides (rounded to the row's "
      "dtype), outputs checked with the unit tests' tolerances before timing\n\n",
      absl::GetFlag(FLAGS_passes), absl::GetFlag(FLAGS_min_reps), absl::GetFlag(FLAGS_max_reps),
      absl::GetFlag(FLAGS_budget_s), absl::GetFlag(FLAGS_vocab));
  std::cout << FormatDeviceTable(table);
  return PrintTail(alternatives, measured.mismatches, CheckedRows(cases));
}

absl::Status Main(const char* argv0) {
  const int threads = absl::GetFlag(FLAGS_threads);
  const int passes = absl::GetFlag(FLAGS_passes);
  if (threads < 1 || passes < 1) return absl::InvalidArgumentError("--threads and --passes >= 1");
  TFM_ASSIGN_OR_RETURN(const Device device, Device::Parse(absl::GetFlag(FLAGS_device)));
  if (device.is_cpu()) {
    // Checks --dtype (only f32 here) before anything runs.
    TFM_RETURN_IF_ERROR(Dtypes(device).status());
  }
  // Before any op runs: ThreadPool::Default() reads TFM_NUM_THREADS once and
  // threads every op, GEMMs included (the BLAS runs single-threaded under it).
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  TFM_ASSIGN_OR_RETURN(const std::string script, TorchScript(argv0));
  return device.is_cuda() ? MainCuda(script, device) : MainCpu(script);
}

}  // namespace
}  // namespace bench
}  // namespace tfm

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = tfm::bench::Main(argv[0]);
  if (!status.ok()) {
    std::cerr << "ops_vs_torch: " << status << "\n";
    return 1;
  }
  return 0;
}
