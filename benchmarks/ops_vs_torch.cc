// Times our CPU ops and the same ops in PyTorch in one run, with the same
// number of threads on both sides, and prints one comparison table.
//
//   bazel run -c opt //benchmarks:ops_vs_torch [-- --threads=2 --peer_python=...]
//
// The PyTorch side runs in the bench venv's interpreter (tools/setup_bench.sh)
// with benchmarks/torch_ops.py, which receives the cases as JSON lines; the
// two sides take turns case by case.
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
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
#include "benchmarks/op_cases.h"
#include "benchmarks/machine_peak.h"
#include "benchmarks/output_check.h"
#include "benchmarks/peer_table.h"
#include "benchmarks/torch_peer.h"
#include "core/cpu_features.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"
#include "tests/util/npy.h"
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
ABSL_FLAG(std::string, filter, "",
          "Run only the cases whose op or shape contains this text (e.g. attention); the "
          "sgemm reference always runs.");

namespace tfm {
namespace bench {
namespace {

// Two warm-up calls (the second sizes the repetitions), then the median of
// the timed calls: the same policy as median_ms in torch_ops.py.
absl::StatusOr<double> TimeMedianMs(const Run& body) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  TFM_RETURN_IF_ERROR(body().status());
  Clock::time_point start = Clock::now();
  TFM_RETURN_IF_ERROR(body().status());
  const double first = std::max(seconds(Clock::now() - start), 1e-9);
  const int reps = std::clamp(static_cast<int>(std::ceil(absl::GetFlag(FLAGS_budget_s) / first)),
                              absl::GetFlag(FLAGS_min_reps), absl::GetFlag(FLAGS_max_reps));
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    start = Clock::now();
    TFM_RETURN_IF_ERROR(body().status());
    times.push_back(seconds(Clock::now() - start));
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  double median = times[reps / 2];
  if (reps % 2 == 0) {
    median = (median + *std::max_element(times.begin(), times.begin() + reps / 2)) / 2;
  }
  return median * 1e3;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string CpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (absl::StartsWith(line, "model name")) {
      return std::string(absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
    }
  }
  return "unknown";
}

absl::StatusOr<std::string> TorchScript(const char* argv0) {
  if (!absl::GetFlag(FLAGS_torch_script).empty()) return absl::GetFlag(FLAGS_torch_script);
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
    TFM_RETURN_IF_ERROR(testing::WriteNpy(absl::StrCat(dir, "/", input.name, ".npy"), input.tensor));
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

std::string Request(int index, const OpCase& c, const std::string& dir, bool save_outputs) {
  return absl::StrFormat(R"({"index": %d, "spec": %s, "inputs": "%s", "save_outputs": %s})",
                         index, c.torch_spec, dir, save_outputs ? "true" : "false");
}

// Of the FMA peak for GEMM rows, of the copy bandwidth for memory-bound ones.
double PeakFraction(const OpCase& c, double ms, const MachinePeak& peak) {
  switch (c.bound) {
    case Bound::kGemm:
      return c.flops / (ms * 1e-3) / 1e9 / peak.FmaPeakGflops();
    case Bound::kMemory:
      return c.bytes / (ms * 1e-3) / 1e9 / peak.copy_gb_per_s;
    case Bound::kOther:
      break;
  }
  return -1;
}

std::string AllocatorSummary() {
  const char* cap = std::getenv("TFM_CPU_CACHE_MB");
  return absl::StrCat("caching allocator (blocks >= 1 MiB kept for reuse, cap ",
                      cap != nullptr ? cap : "2048", " MiB), glibc malloc below");
}

absl::Status Main(const char* argv0) {
  const int threads = absl::GetFlag(FLAGS_threads);
  const int passes = absl::GetFlag(FLAGS_passes);
  if (threads < 1 || passes < 1) return absl::InvalidArgumentError("--threads and --passes >= 1");
  // Before any op runs: ThreadPool::Default() reads TFM_NUM_THREADS once and
  // threads every op, GEMMs included (the BLAS runs single-threaded under it).
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  if (BlasUsesGenericKernels()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the BLAS runs generic kernels on this CPU, so every GEMM row would be meaningless: ",
        BlasKernelSummary()));
  }
  if (ThreadPool::Default()->num_threads() != threads) {
    return absl::InternalError("the thread pool was created before --threads took effect");
  }
  TFM_ASSIGN_OR_RETURN(const std::string script, TorchScript(argv0));

  CaseOptions options;
  options.vocab = absl::GetFlag(FLAGS_vocab);
  std::vector<OpCase> cases = BaseModelCases(options);
  const std::string filter = absl::GetFlag(FLAGS_filter);
  cases.erase(std::remove_if(cases.begin(), cases.end(),
                             [&](const OpCase& c) {
                               return !absl::StrContains(c.op, filter) &&
                                      !absl::StrContains(c.shape, filter);
                             }),
              cases.end());
  cases.push_back(SgemmCase());  // Last: reported beside the table, not in it.

  std::cerr << "measuring the machine's FMA peak and copy bandwidth\n";
  const MachinePeak peak = MeasureMachinePeak();

  const std::string peer_command = absl::StrCat(
      ShellQuote(absl::GetFlag(FLAGS_peer_python)), " ", ShellQuote(script), " --threads ",
      threads, " --budget_s ", absl::GetFlag(FLAGS_budget_s), " --min_reps ",
      absl::GetFlag(FLAGS_min_reps), " --max_reps ", absl::GetFlag(FLAGS_max_reps));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Peer> torch, Peer::Start(peer_command));
  TFM_RETURN_IF_ERROR(torch->WaitReady());
  const std::string malloc_path = absl::GetFlag(FLAGS_caching_malloc);
  std::unique_ptr<Peer> torch_cached;
  if (!malloc_path.empty()) {
    if (access(malloc_path.c_str(), R_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no caching malloc at ", malloc_path, ": run `sudo tools/setup_bench.sh` (installs "
          "libjemalloc2) or pass --caching_malloc= to skip the second PyTorch run"));
    }
    TFM_ASSIGN_OR_RETURN(torch_cached, Peer::Start(absl::StrCat(
                                           "LD_PRELOAD=", ShellQuote(malloc_path), " ",
                                           peer_command)));
    TFM_RETURN_IF_ERROR(torch_cached->WaitReady());
  }

  char dir_template[] = "/tmp/ops_vs_torch.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string files = dir_template;

  // Pass by pass, case by case: PyTorch (pass 0: computing its outputs for
  // the check first), ours, PyTorch with the caching malloc, so load that
  // comes and goes on a shared machine hits all three alike.
  const int n = static_cast<int>(cases.size());
  std::vector<TableRow> rows(n);
  std::vector<std::string> mismatches;
  for (int pass = 0; pass < passes; ++pass) {
    for (int i = 0; i < n; ++i) {
      const OpCase& c = cases[i];
      TableRow& row = rows[i];
      const std::string dir = absl::StrCat(files, "/case_", i);
      TFM_ASSIGN_OR_RETURN(Prepared prepared, c.prepare());
      const bool with_torch = !c.torch_spec.empty();
      if (with_torch) {
        const bool check = pass == 0;
        std::vector<Tensor> ours_outputs;
        if (check) {
          TFM_RETURN_IF_ERROR(WriteInputs(prepared.inputs, dir));
          TFM_ASSIGN_OR_RETURN(ours_outputs, prepared.run());
        }
        TFM_ASSIGN_OR_RETURN(double ms, torch->Time(pass * n + i, Request(pass * n + i, c, dir, check)));
        row.torch.ms.push_back(ms);
        if (check) {
          const absl::Status agree =
              CheckOutputs(c, prepared.inputs, ours_outputs, TakeTorchOutputs(dir));
          row.outputs_match = agree.ok();
          if (!agree.ok()) {
            mismatches.push_back(absl::StrCat(c.op, " ", c.shape, ": ", agree.message()));
          }
        }
      }
      TFM_ASSIGN_OR_RETURN(double ours_ms, TimeMedianMs(prepared.run));
      row.ours.ms.push_back(ours_ms);
      prepared = Prepared{};  // Frees our inputs before a peer allocates its own.
      if (with_torch && torch_cached != nullptr) {
        TFM_ASSIGN_OR_RETURN(double ms, torch_cached->Time(pass * n + i,
                                                           Request(pass * n + i, c, dir, false)));
        row.torch_cached.ms.push_back(ms);
      }
      std::cerr << absl::StrFormat("  pass %d  %s %s: ours %.3f ms\n", pass, c.op, c.shape,
                                   ours_ms);
    }
  }
  TFM_ASSIGN_OR_RETURN(PeerReport peer, torch->Report());
  torch.reset();
  torch_cached.reset();
  std::filesystem::remove_all(files);

  std::vector<TableRow> table;
  std::string alternatives;
  for (int i = 0; i + 1 < n; ++i) {
    const OpCase& c = cases[i];
    TableRow& row = rows[i];
    row.op = c.op;
    row.shape = c.shape;
    row.group = c.group;
    row.bound = c.bound;
    row.peak_fraction = PeakFraction(c, row.ours.Median(), peak);
    if (c.own_baseline.empty()) {
      table.push_back(row);
      continue;
    }
    for (int j = 0; j + 1 < n; ++j) {
      if (absl::StrCat(cases[j].op, " ", cases[j].shape) != c.own_baseline) continue;
      absl::StrAppendFormat(&alternatives, "  %s %s: %.3f ms (+-%.0f%%) against our %s: %.3f ms\n",
                            c.op, c.shape, row.ours.Median(), 100 * row.ours.Spread(),
                            c.own_baseline, rows[j].ours.Median());
    }
  }
  const TableRow& sgemm = rows[n - 1];
  const auto gflops = [&](double ms) { return cases[n - 1].flops / (ms * 1e-3) / 1e9; };

  std::cout << absl::StrFormat("machine: %s, nproc %d; threads %d on both sides\n", CpuModel(),
                               std::thread::hardware_concurrency(), threads);
  std::cout << "ours:  ISA " << CpuSummary() << "\n";
  std::cout << "       BLAS " << BlasKernelSummary() << "\n";
  std::cout << absl::StrFormat("       threads: ThreadPool %d (BLAS single-threaded under it); "
                               "allocator: %s\n",
                               ThreadPool::Default()->num_threads(), AllocatorSummary());
  std::cout << absl::StrFormat(
      "torch: %s, ISA (cpu capability) %s, BLAS %s, mkldnn %s, threads %s\n",
      peer.info["torch_version"], peer.info["cpu_capability"], peer.info["blas_info"],
      peer.info["mkldnn"], peer.info["threads"]);
  std::cout << absl::StrFormat(
      "       allocator: glibc malloc (torch_ms)%s\n",
      torch_cached == nullptr && malloc_path.empty()
          ? std::string()
          : absl::StrCat(" and ", malloc_path, " preloaded (torch_je); torch/ours uses the faster"));
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
      passes, absl::GetFlag(FLAGS_budget_s), absl::GetFlag(FLAGS_min_reps),
      absl::GetFlag(FLAGS_max_reps), options.vocab);
  std::cout << FormatTable(table);
  if (!alternatives.empty()) {
    std::cout << "\nour own alternatives (different work than PyTorch's, so no ratio):\n"
              << alternatives;
  }
  if (!mismatches.empty()) {
    std::cout << "\noutputs that differ from PyTorch's (no ratio shown):\n";
    for (const std::string& m : mismatches) std::cout << "  " << m << "\n";
  }
  return absl::OkStatus();
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
