#include "runtime/train/tensorboard_writer.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

// Reads the event files of a directory with TensorBoard itself: its record
// reader (which checks both masked CRCs of every record and raises on a
// mismatch), then its EventAccumulator, as the TensorBoard server would.
constexpr char kReadBack[] = R"(
import glob, sys
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.backend.event_processing import event_accumulator as ea
records = 0
for path in glob.glob(sys.argv[1] + "/events.out.tfevents.*"):
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    while True:
        try:
            reader.GetNext()
        except Exception as e:
            if type(e).__name__ == "OutOfRangeError":
                break
            raise
        records += 1
print("records", records)
acc = ea.EventAccumulator(sys.argv[1], size_guidance={ea.SCALARS: 0})
acc.Reload()
print("version", acc.file_version)
for tag in sorted(acc.Tags()["scalars"]):
    print(tag, " ".join("%d=%r" % (e.step, e.value) for e in acc.Scalars(tag)))
)";

std::string FreshLogDir(const std::string& name) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::filesystem::remove_all(path);
  return path;
}

TEST(TensorBoardWriterTest, TensorBoardReadsOurScalars) {
  const std::string log_dir = FreshLogDir("tensorboard");
  absl::StatusOr<TensorBoardWriter> writer = TensorBoardWriter::Create(log_dir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(gethostname(host, HOST_NAME_MAX), 0);
  const std::string name = std::filesystem::path(writer->path()).filename().string();
  EXPECT_TRUE(absl::StartsWith(name, "events.out.tfevents.")) << name;
  EXPECT_TRUE(absl::EndsWith(name, std::string(".") + host)) << name;

  ASSERT_TRUE(
      writer->AddScalars(100, {{"update", 100}, {"loss", 5.5}, {"lr", 0.0001220703125}}, "train/")
          .ok());
  // Each event is on disk as soon as it is added: a live TensorBoard sees it.
  absl::StatusOr<std::string> early = testing::RunPeerPython(kReadBack, {log_dir});
  ASSERT_TRUE(early.ok()) << early.status();
  EXPECT_EQ(*early, "records 2\nversion 2.0\ntrain/loss 100=5.5\ntrain/lr 100=0.0001220703125\n");

  ASSERT_TRUE(writer->AddScalars(200, {{"loss", 4.25}, {"lr", 0.000244140625}}, "train/").ok());
  ASSERT_TRUE(writer->AddScalars(200, {{"loss", 4.0}}, "valid/").ok());
  absl::StatusOr<std::string> out = testing::RunPeerPython(kReadBack, {log_dir});
  ASSERT_TRUE(out.ok()) << out.status();
  // Values are float32, as TensorBoard stores them; these are exact in it.
  EXPECT_EQ(*out,
            "records 4\nversion 2.0\ntrain/loss 100=5.5 200=4.25\n"
            "train/lr 100=0.0001220703125 200=0.000244140625\nvalid/loss 200=4.0\n");
}

}  // namespace
}  // namespace tfm
