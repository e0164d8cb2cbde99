// The test environment itself: the peer Python with its packages and the
// shared corpora must be reachable, or the parity tests would be meaningless.
#include "tests/util/peer_python.h"

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace tfm {
namespace testing {
namespace {

TEST(PeerPythonTest, PeerHasTorchAndSacrebleu) {
  absl::StatusOr<std::string> out = RunPeerPython(
      "import torch, sacrebleu\nprint(torch.ones(3).sum().item())\n");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(*out), "3.0");
}

// Bazel reruns the parity tests when the environment changes only if the
// files identifying what the interpreter imports are among their inputs.
TEST(PeerPythonTest, FingerprintCoversTheImportedPackages) {
  absl::StatusOr<std::string> out = RunPeerPython(R"py(
import importlib.metadata, os, sys
fingerprint = set()
for root, _, files in os.walk(sys.argv[1]):
    fingerprint.update(os.path.realpath(os.path.join(root, f)) for f in files)
for name in ("numpy", "regex", "sacrebleu", "torch"):
    metadata = importlib.metadata.distribution(name)._path
    if os.path.isdir(metadata):
        metadata = [os.path.join(metadata, f) for f in ("METADATA", "PKG-INFO")
                    if os.path.exists(os.path.join(metadata, f))][0]
    if os.path.realpath(metadata) not in fingerprint:
        print("unwatched", name, metadata)
if os.path.realpath(sys.executable) not in fingerprint:
    print("unwatched interpreter", sys.executable)
)py",
                                                  {RunfilePath("../peer_python_env")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "");
}

TEST(PeerPythonTest, FailureCarriesStderr) {
  absl::StatusOr<std::string> out = RunPeerPython("import sys\nsys.exit('boom')\n");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("boom"), std::string::npos);
}

TEST(PeerPythonTest, SharedDataIsReachable) {
  absl::StatusOr<std::string> out = RunPeerPython(
      "import gzip, sys\nprint(sum(1 for _ in gzip.open(sys.argv[1], 'rt')))\n",
      {SharedDataPath("multi30k/val.en.gz")});
  ASSERT_TRUE(out.ok()) << out.status();
  int lines = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(*out), &lines));
  EXPECT_EQ(lines, 1014);  // Multi30k's published validation size.
}

}  // namespace
}  // namespace testing
}  // namespace tfm
