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
