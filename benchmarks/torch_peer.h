// The PyTorch peer (benchmarks/torch_ops.py) as a child process: requests
// go to its stdin one line at a time, its stdout is read until the answer;
// its stderr (progress, Python errors) passes through.
#ifndef TFM_BENCHMARKS_TORCH_PEER_H_
#define TFM_BENCHMARKS_TORCH_PEER_H_

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/peer_table.h"
#include "core/status_macros.h"

namespace tfm {
namespace bench {

class Peer {
 public:
  static absl::StatusOr<std::unique_ptr<Peer>> Start(const std::string& command) {
    int to_child[2], from_child[2];
    // Close-on-exec: a second peer must not inherit this one's pipe ends, or
    // closing our end would never give this peer its EOF (dup2 clears the
    // flag on the child's stdin and stdout).
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      return absl::InternalError("pipe failed");
    }
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

  // Sends one request (a JSON object with "index", "spec" and the files'
  // directories, see torch_ops.py), returns its median time.
  absl::StatusOr<double> Time(int index, const std::string& request) {
    fputs(absl::StrCat(request, "\n").c_str(), in_);
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

}  // namespace bench
}  // namespace tfm

#endif  // TFM_BENCHMARKS_TORCH_PEER_H_
