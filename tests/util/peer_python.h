// Running reference implementations (PyTorch, sacreBLEU) from C++ tests.
//
// The peers live in the Python environment tools/setup.sh creates
// (/opt/transformer-venv, or $TFM_PEER_PYTHON when Bazel runs). A missing peer
// is a test failure that says to run the setup, never a silent skip; a changed
// one reruns the tests (their inputs include its fingerprint).
#ifndef TFM_TESTS_UTIL_PEER_PYTHON_H_
#define TFM_TESTS_UTIL_PEER_PYTHON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {
namespace testing {

// The interpreter of the peer environment, as fingerprinted by
// @peer_python_env (third_party/peer_python_environment.bzl); an error naming
// the setup command when it is missing.
absl::StatusOr<std::string> PeerPython();

// Runs `script` (Python source) with `args`, returns its standard output.
// Fails with the script's standard error if it exits non-zero.
absl::StatusOr<std::string> RunPeerPython(const std::string& script,
                                          const std::vector<std::string>& args = {});

// A fresh file under the test's temporary directory (TEST_TMPDIR) holding
// `contents`; returns its path.
std::string WriteTempFile(const std::string& name, const std::string& contents);

// Path of a runfile of this workspace, e.g. RunfilePath("tasks/BUILD").
std::string RunfilePath(const std::string& relative);

// Path of a file from ../shared/data given as a runfile of @shared_data, e.g.
// SharedDataPath("multi30k/train.en.gz").
std::string SharedDataPath(const std::string& relative);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_PEER_PYTHON_H_
