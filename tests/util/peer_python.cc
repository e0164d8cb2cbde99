#include "tests/util/peer_python.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace testing {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

std::string RunfilesRoot() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return srcdir != nullptr ? srcdir : ".";
}

}  // namespace

std::string PeerPython() {
  const char* python = std::getenv("TFM_PEER_PYTHON");
  return python != nullptr ? python : "/opt/transformer-venv/bin/python3";
}

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = absl::StrCat(TempDir(), "/", name);
  std::ofstream file(path, std::ios::binary);
  file << contents;
  return path;
}

absl::StatusOr<std::string> RunPeerPython(const std::string& script,
                                          const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string script_path =
      WriteTempFile(absl::StrCat("peer_script_", ++counter, ".py"), script);
  const std::string stderr_path = absl::StrCat(TempDir(), "/peer_stderr_", counter, ".txt");
  std::string command = absl::StrCat(ShellQuote(PeerPython()), " ", ShellQuote(script_path));
  for (const std::string& arg : args) absl::StrAppend(&command, " ", ShellQuote(arg));
  absl::StrAppend(&command, " 2>", ShellQuote(stderr_path));
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("popen failed: " + command);
  std::string output;
  std::array<char, 4096> buffer;
  size_t read;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), read);
  }
  const int status = pclose(pipe);
  if (status != 0) {
    std::ifstream err(stderr_path);
    std::string error((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
    return absl::FailedPreconditionError(absl::StrCat(
        "peer python (", PeerPython(), ") failed with status ", WEXITSTATUS(status),
        "; run tools/setup.sh to create the peer environment.\n", error));
  }
  return output;
}

std::string RunfilePath(const std::string& relative) {
  return absl::StrCat(RunfilesRoot(), "/transformer/", relative);
}

std::string SharedDataPath(const std::string& relative) {
  // Runfiles of external repositories sit beside the main workspace's.
  return absl::StrCat(RunfilesRoot(), "/shared_data/", relative);
}

}  // namespace testing
}  // namespace tfm
