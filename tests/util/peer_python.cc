#include "tests/util/peer_python.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "tests/util/shell_quote.h"

namespace tfm {
namespace testing {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string RunfilesRoot() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return srcdir != nullptr ? srcdir : ".";
}

}  // namespace

absl::StatusOr<std::string> PeerPython() {
  // Written by third_party/peer_python_environment.bzl, so the tests run the
  // very interpreter whose files Bazel fingerprints for them.
  const std::string config_path =
      absl::StrCat(RunfilesRoot(), "/peer_python_env/interpreter_path.txt");
  std::ifstream config(config_path);
  std::string interpreter;
  if (!std::getline(config, interpreter) || interpreter.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot read ", config_path,
        ": a test that runs the peer must depend on //tests/util:peer_python"));
  }
  if (access(interpreter.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the peer Python environment is missing: ", interpreter, " is not an executable (",
        std::strerror(errno), "). Create it with `sudo tools/setup.sh` (it makes ",
        "/opt/transformer-venv), or set TFM_PEER_PYTHON to an interpreter with torch and "
        "sacrebleu."));
  }
  return interpreter;
}

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const std::string path = absl::StrCat(TempDir(), "/", name);
  std::ofstream file(path, std::ios::binary);
  file << contents;
  return path;
}

absl::StatusOr<std::string> RunPeerPython(const std::string& script,
                                          const std::vector<std::string>& args) {
  absl::StatusOr<std::string> python = PeerPython();
  if (!python.ok()) return python.status();
  static int counter = 0;
  const std::string script_path =
      WriteTempFile(absl::StrCat("peer_script_", ++counter, ".py"), script);
  const std::string stderr_path = absl::StrCat(TempDir(), "/peer_stderr_", counter, ".txt");
  std::string command = absl::StrCat(ShellQuote(*python), " ", ShellQuote(script_path));
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
        "peer python (", *python, ") failed with status ", WEXITSTATUS(status),
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
