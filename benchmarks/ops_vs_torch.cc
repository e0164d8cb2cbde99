// Times our CPU ops and the same ops in PyTorch in one run, with the same
// number of threads on both sides, and prints one comparison table.
//
//   bazel run -c opt //benchmarks:ops_vs_torch [-- --threads=2 --peer_python=...]
//
// The PyTorch side runs in the bench venv's interpreter (tools/setup_bench.sh)
// with benchmarks/torch_ops.py, which receives the cases as JSON lines; the
// two sides take turns case by case.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
#include "benchmarks/peer_table.h"
#include "core/status_macros.h"
#include "core/thread_pool.h"
#include "ops/matmul/gemm_cpu.h"
#include "tools/cpp/runfiles/runfiles.h"

ABSL_FLAG(int, threads, static_cast<int>(std::thread::hardware_concurrency()),
          "Threads for both sides: our ThreadPool and OpenBLAS, torch.set_num_threads.");
ABSL_FLAG(std::string, peer_python, "/opt/transformer-bench-venv/bin/python3",
          "Python with PyTorch (tools/setup_bench.sh creates it).");
ABSL_FLAG(std::string, torch_script, "",
          "The peer script; defaults to benchmarks/torch_ops.py from the runfiles.");
ABSL_FLAG(int64_t, vocab, 8000,
          "Vocabulary of the tied projection and embedding cases (the base model's 37000 "
          "makes the projection's backward alone take seconds on 2 cores).");
ABSL_FLAG(double, budget_s, 0.4, "Target timed seconds per case and side.");
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
absl::StatusOr<double> TimeMedianMs(const Body& body) {
  using Clock = std::chrono::steady_clock;
  const auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
  TFM_RETURN_IF_ERROR(body());
  Clock::time_point start = Clock::now();
  TFM_RETURN_IF_ERROR(body());
  const double first = std::max(seconds(Clock::now() - start), 1e-9);
  const int reps = std::clamp(static_cast<int>(std::ceil(absl::GetFlag(FLAGS_budget_s) / first)),
                              absl::GetFlag(FLAGS_min_reps), absl::GetFlag(FLAGS_max_reps));
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    start = Clock::now();
    TFM_RETURN_IF_ERROR(body());
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

// The PyTorch peer as a child process: cases go to its stdin one line at a
// time, its stdout is read until the answer; its stderr (progress, Python
// errors) passes through.
class Peer {
 public:
  static absl::StatusOr<std::unique_ptr<Peer>> Start(const std::string& command) {
    int to_child[2], from_child[2];
    if (pipe(to_child) != 0 || pipe(from_child) != 0) return absl::InternalError("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork failed");
    if (pid == 0) {
      dup2(to_child[0], STDIN_FILENO);
      dup2(from_child[1], STDOUT_FILENO);
      for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]}) close(fd);
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    return std::unique_ptr<Peer>(
        new Peer(command, pid, fdopen(to_child[1], "w"), fdopen(from_child[0], "r")));
  }

  ~Peer() {
    fclose(in_);  // EOF ends the peer's loop.
    fclose(out_);
    waitpid(pid_, nullptr, 0);
  }

  // Sends one case, returns its median time.
  absl::StatusOr<double> Time(int index, const std::string& spec) {
    fputs(absl::StrFormat("{\"index\": %d, \"spec\": %s}\n", index, spec).c_str(), in_);
    fflush(in_);
    char* line = nullptr;
    size_t capacity = 0;
    while (getline(&line, &capacity, out_) > 0) {
      transcript_ += line;
      if (absl::StartsWith(line, "result")) break;
    }
    free(line);
    TFM_ASSIGN_OR_RETURN(PeerReport report, ParsePeerOutput(transcript_));
    auto it = report.median_ms.find(index);
    if (it == report.median_ms.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the PyTorch peer gave no result (", command_, "); is the bench venv there? Run "
          "`sudo tools/setup_bench.sh` or pass --peer_python."));
    }
    return it->second;
  }

  // Blocks until the peer has imported torch and said who it is (its last
  // info line), so its start-up never overlaps our first timing.
  absl::Status WaitReady() {
    char* line = nullptr;
    size_t capacity = 0;
    bool ready = false;
    while (!ready && getline(&line, &capacity, out_) > 0) {
      transcript_ += line;
      ready = absl::StartsWith(line, "info threads");
    }
    free(line);
    if (!ready) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the PyTorch peer did not start (", command_, "); is the bench venv there? Run "
          "`sudo tools/setup_bench.sh` or pass --peer_python."));
    }
    return absl::OkStatus();
  }

  // Everything the peer said so far (info lines included).
  absl::StatusOr<PeerReport> Report() const { return ParsePeerOutput(transcript_); }

 private:
  Peer(std::string command, pid_t pid, FILE* in, FILE* out)
      : command_(std::move(command)), pid_(pid), in_(in), out_(out) {}

  std::string command_;
  pid_t pid_;
  FILE* in_;
  FILE* out_;
  std::string transcript_;
};

absl::Status Main(const char* argv0) {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (threads < 1) return absl::InvalidArgumentError("--threads must be >= 1");
  // Before any op runs: ThreadPool::Default() reads TFM_NUM_THREADS once and
  // threads every op, GEMMs included (OpenBLAS runs single-threaded under it).
  setenv("TFM_NUM_THREADS", absl::StrCat(threads).c_str(), 1);
  if (BlasUsesGenericKernels()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the BLAS runs generic kernels on this CPU: ", BlasKernelSummary()));
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

  const std::string command = absl::StrCat(
      ShellQuote(absl::GetFlag(FLAGS_peer_python)), " ", ShellQuote(script), " --threads ",
      threads, " --budget_s ", absl::GetFlag(FLAGS_budget_s), " --min_reps ",
      absl::GetFlag(FLAGS_min_reps), " --max_reps ", absl::GetFlag(FLAGS_max_reps));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Peer> peer_process, Peer::Start(command));
  TFM_RETURN_IF_ERROR(peer_process->WaitReady());

  // Case by case, ours then torch's, while neither side holds the CPU.
  std::vector<double> ours_ms, torch_ms;
  for (size_t i = 0; i < cases.size(); ++i) {
    const OpCase& c = cases[i];
    TFM_ASSIGN_OR_RETURN(Body body, c.prepare());
    TFM_ASSIGN_OR_RETURN(double ms, TimeMedianMs(body));
    body = nullptr;  // Frees the inputs before the peer allocates its own.
    ours_ms.push_back(ms);
    std::cerr << absl::StrFormat("  ours  %s %s: %.3f ms\n", c.op, c.shape, ms);
    TFM_ASSIGN_OR_RETURN(double peer_ms, peer_process->Time(static_cast<int>(i), c.torch_spec));
    torch_ms.push_back(peer_ms);
  }
  TFM_ASSIGN_OR_RETURN(PeerReport peer, peer_process->Report());
  peer_process.reset();

  std::vector<TableRow> rows;
  for (size_t i = 0; i + 1 < cases.size(); ++i) {
    rows.push_back({cases[i].op, cases[i].shape, ours_ms[i], torch_ms[i]});
  }
  const size_t sgemm = cases.size() - 1;
  const auto gflops = [&](double ms) { return cases[sgemm].flops / (ms * 1e-3) / 1e9; };

  std::cout << absl::StrFormat(
      "machine: %s, nproc %d, threads %d (ours: ThreadPool %d, OpenBLAS 1 under it; torch %s)\n",
      CpuModel(), std::thread::hardware_concurrency(), threads,
      ThreadPool::Default()->num_threads(), peer.info["threads"]);
  std::cout << "ours:  " << BlasKernelSummary() << "\n";
  std::cout << absl::StrFormat("torch: %s, BLAS_INFO=%s, cpu capability %s, mkldnn %s\n",
                               peer.info["torch_version"], peer.info["blas_info"],
                               peer.info["cpu_capability"], peer.info["mkldnn"]);
  std::cout << absl::StrFormat("sgemm %s fp32 GFLOP/s: ours (OpenBLAS) %.1f, torch (%s) %.1f\n",
                               cases[sgemm].shape, gflops(ours_ms[sgemm]), peer.info["blas_info"],
                               gflops(torch_ms[sgemm]));
  std::cout << absl::StrFormat("median of repeated calls after 2 warm-ups (%.2f s per case, "
                               "%d..%d calls); vocab %d\n\n",
                               absl::GetFlag(FLAGS_budget_s), absl::GetFlag(FLAGS_min_reps),
                               absl::GetFlag(FLAGS_max_reps), options.vocab);
  std::cout << FormatTable(rows);
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
