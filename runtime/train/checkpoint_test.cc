#include "runtime/train/checkpoint.h"

#include <filesystem>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/data/crc32c.h"
#include "core/data/file_io.h"
#include "runtime/train/checkpoint_testing.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;
using ::tfm::testing::FreshDirectory;
using ::tfm::testing::SampleCheckpoint;
using ::tfm::testing::TensorBytes;

void ExpectSameTensors(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    EXPECT_EQ(actual[i].second.shape(), expected[i].second.shape());
    EXPECT_EQ(TensorBytes(actual[i].second), TensorBytes(expected[i].second)) << actual[i].first;
  }
}

std::vector<std::string> DirectoryNames(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(CheckpointTest, RoundTripsEveryPart) {
  const std::string work_dir = FreshDirectory("round_trip");
  const Checkpoint written = SampleCheckpoint(12345);
  absl::StatusOr<std::string> dir = WriteCheckpoint(work_dir, written);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(*dir, work_dir + "/checkpoint_000012345");
  // Only the committed directory: the temporary one was renamed.
  EXPECT_EQ(DirectoryNames(work_dir), std::vector<std::string>{"checkpoint_000012345"});
  EXPECT_EQ(DirectoryNames(*dir),
            (std::vector<std::string>{"MANIFEST", "config.pbtxt", "model.safetensors",
                                      "optimizer.safetensors", "state.pbtxt", "vocabulary.model"}));

  absl::StatusOr<Checkpoint> read = ReadCheckpoint(*dir);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSameTensors(read->model, written.model);
  ExpectSameTensors(read->optimizer, written.optimizer);
  EXPECT_TRUE(MessageDifferencer::Equals(read->state, written.state)) << read->state.DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(read->config, written.config));
  EXPECT_EQ(read->vocabulary, written.vocabulary);

  absl::StatusOr<Checkpoint> for_decoding = ReadCheckpoint(*dir, CheckpointParts::kDecoding);
  ASSERT_TRUE(for_decoding.ok()) << for_decoding.status();
  EXPECT_TRUE(for_decoding->optimizer.empty());
  ExpectSameTensors(for_decoding->model, written.model);
}

// A task's files (parsing's tag counts) travel with the checkpoint, under
// the same checksums as the rest.
TEST(CheckpointTest, TaskFilesRoundTripUnderTheManifest) {
  const std::string work_dir = FreshDirectory("task_files");
  Checkpoint written = SampleCheckpoint(7);
  written.task_files["task_tag_counts.tsv"] = "the\tDT\t5\nran\tVBD\t2\n";
  written.task_files["task_empty"] = "";
  absl::StatusOr<std::string> dir = WriteCheckpoint(work_dir, written);
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(*dir, CheckpointParts::kDecoding);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->task_files, written.task_files);

  // Without task files, none are read.
  absl::StatusOr<std::string> plain = WriteCheckpoint(work_dir, SampleCheckpoint(8));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(ReadCheckpoint(*plain)->task_files.empty());

  // A damaged task file is caught like any other.
  ASSERT_TRUE(WriteFileAtomically(*dir + "/task_tag_counts.tsv", "the\tDT\t9\nran\tVBD\t2\n").ok());
  const absl::Status damaged = VerifyCheckpoint(*dir).status();
  EXPECT_EQ(damaged.code(), absl::StatusCode::kDataLoss) << damaged;
  EXPECT_THAT(std::string(damaged.message()), ::testing::HasSubstr("task_tag_counts.tsv"));

  // A name that could clash with the checkpoint's own files is refused,
  // and nothing is left behind.
  Checkpoint clashing = SampleCheckpoint(9);
  clashing.task_files["config.pbtxt"] = "x";
  const absl::Status refused = WriteCheckpoint(work_dir, clashing).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("config.pbtxt"));
  EXPECT_EQ(DirectoryNames(work_dir),
            (std::vector<std::string>{"checkpoint_000000007", "checkpoint_000000008"}));
}

// Interop: PyTorch loads our model.safetensors as a state_dict.
TEST(CheckpointTest, PyTorchLoadsTheModelFile) {
  const std::string work_dir = FreshDirectory("python");
  const Checkpoint written = SampleCheckpoint(7, 3.0f);
  const std::string dir = WriteCheckpoint(work_dir, written).value();
  absl::StatusOr<std::string> out = testing::RunPeerPython(R"(
import sys, torch
from safetensors.torch import load_file
state_dict = load_file(sys.argv[1] + "/model.safetensors")
for name, tensor in state_dict.items():
    print(name, tuple(tensor.shape), " ".join(repr(v) for v in tensor.flatten().tolist()))
)",
                                                           {dir});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> lines = absl::StrSplit(*out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), written.model.size());
  for (const auto& [name, tensor] : written.model) {
    const auto line = std::find_if(
        lines.begin(), lines.end(),
        [&name = name](const std::string& l) { return absl::StartsWith(l, name + " "); });
    ASSERT_NE(line, lines.end()) << name;
    std::vector<std::string> words = absl::StrSplit(*line, ' ');
    const std::vector<float> values = tensor.ToVector<float>();
    ASSERT_EQ(words.size(), 3 + values.size()) << *line;  // name, "(r," "c)", values.
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(std::stof(words[3 + i]), values[i]);
  }
}

class CorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = WriteCheckpoint(FreshDirectory("corrupt"), SampleCheckpoint(50)).value();
  }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Replace(const std::string& name, const std::string& contents) const {
    ASSERT_TRUE(WriteFileAtomically(Path(name), contents).ok());
  }
  std::string Contents(const std::string& name) const {
    return ReadFileToString(Path(name)).value();
  }
  // The error of reading, which must be DataLoss.
  std::string ReadError() const {
    absl::StatusOr<Checkpoint> read = ReadCheckpoint(dir_);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << read.status();
    return std::string(read.status().message());
  }

  std::string dir_;
};

TEST_F(CorruptionTest, FlippedByteNamesTheFileAndChecksum) {
  std::string model = Contents(kModelFile);
  model[model.size() - 2] ^= 0x10;  // Inside a weight: the format stays valid.
  Replace(kModelFile, model);
  const std::string error = ReadError();
  EXPECT_THAT(error, HasSubstr(Path(kModelFile)));
  EXPECT_THAT(error, HasSubstr("CRC-32C"));
}

TEST_F(CorruptionTest, TruncatedFileNamesTheFileAndSizes) {
  const std::string optimizer = Contents(kOptimizerFile);
  Replace(kOptimizerFile, optimizer.substr(0, optimizer.size() / 2));
  const std::string error = ReadError();
  EXPECT_THAT(error, HasSubstr(Path(kOptimizerFile)));
  EXPECT_THAT(error, HasSubstr(absl::StrCat(optimizer.size() / 2, " bytes")));
  EXPECT_THAT(error, HasSubstr(absl::StrCat("records ", optimizer.size())));
}

TEST_F(CorruptionTest, MissingManifestMeansIncomplete) {
  std::filesystem::remove(Path(kManifestFile));
  EXPECT_THAT(ReadError(), HasSubstr("incomplete"));
}

TEST_F(CorruptionTest, EditedManifestFailsItsOwnChecksum) {
  std::string manifest = Contents(kManifestFile);
  manifest.replace(manifest.find("update: 50"), 10, "update: 51");
  Replace(kManifestFile, manifest);
  EXPECT_THAT(ReadError(), HasSubstr("MANIFEST: checksum"));
  Replace(kManifestFile, manifest.substr(0, manifest.size() / 2));
  EXPECT_THAT(ReadError(), HasSubstr("no checksum line"));
}

TEST_F(CorruptionTest, NewerFormatIsRefusedNotMisread) {
  std::string manifest = Contents(kManifestFile);
  manifest.replace(manifest.find("format_version: 1"), 17, "format_version: 2");
  const std::string body = manifest.substr(0, manifest.rfind("manifest_crc32c: "));
  Replace(kManifestFile, absl::StrCat(body, "manifest_crc32c: ", Crc32c(body), "\n"));
  absl::Status status = ReadCheckpoint(dir_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("format 2 is newer"));
}

// A manifest whose checksum holds but whose text does not parse (a field
// this build does not know): the error names the line and the field.
TEST_F(CorruptionTest, UnparsableManifestNamesItsLine) {
  const std::string manifest = Contents(kManifestFile);
  const std::string body =
      absl::StrCat("shard_count: 2\n", manifest.substr(0, manifest.rfind("manifest_crc32c: ")));
  Replace(kManifestFile, absl::StrCat(body, "manifest_crc32c: ", Crc32c(body), "\n"));
  const absl::Status status = ReadCheckpoint(dir_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(status.message()), HasSubstr("MANIFEST:1:"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"shard_count\""));
  EXPECT_THAT(std::string(status.message()), HasSubstr("not a valid tfm.train.Manifest"));
}

// Written through the writer, so every checksum holds: only the values are
// wrong, in the model's weights or in the optimizer's moments.
TEST(CheckpointTest, NonFiniteValuesAreRefusedNamingTheTensor) {
  for (const bool in_optimizer : {false, true}) {
    Checkpoint checkpoint = SampleCheckpoint(60);
    NamedTensors& tensors = in_optimizer ? checkpoint.optimizer : checkpoint.model;
    Tensor& poisoned = tensors[1].second;
    ASSERT_GE(poisoned.num_elements(), 3);
    poisoned.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
    poisoned.data<float>()[2] = -std::numeric_limits<float>::infinity();
    const std::string dir =
        WriteCheckpoint(FreshDirectory(in_optimizer ? "nan_moment" : "nan_weight"), checkpoint)
            .value();
    const absl::Status status = ReadCheckpoint(dir).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
    const std::string message(status.message());
    EXPECT_THAT(message, HasSubstr(dir + "/" + (in_optimizer ? kOptimizerFile : kModelFile)));
    EXPECT_THAT(message,
                HasSubstr(absl::StrCat("'", tensors[1].first, "' holds 2 non-finite values")));
    EXPECT_THAT(message, HasSubstr("first at element 1"));
    // Decoding reads no moments: a bad one does not stop it.
    EXPECT_EQ(ReadCheckpoint(dir, CheckpointParts::kDecoding).ok(), in_optimizer);
  }
}

// A negative second moment (checksums intact) is refused naming it, rather
// than surfacing as "training diverged" at the first update.
TEST(CheckpointTest, NegativeSecondMomentIsRefused) {
  Checkpoint checkpoint = SampleCheckpoint(70);
  checkpoint.optimizer.emplace_back("encoder.embedding.weight.exp_avg_sq",
                                    Tensor::FromVector<float>({0.5f, -1.0f}, {2}).value());
  const std::string dir = WriteCheckpoint(FreshDirectory("negative_moment"), checkpoint).value();
  const absl::Status status = ReadCheckpoint(dir).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("'encoder.embedding.weight.exp_avg_sq' holds -1 at element 1"));
}

TEST_F(CorruptionTest, MissingListedFileIsNamed) {
  std::filesystem::remove(Path(kConfigFile));
  EXPECT_THAT(ReadError(), HasSubstr(Path(kConfigFile) + " is listed in the MANIFEST but missing"));
}

TEST(CheckpointTest, SavingTheSameUpdateAgainReplacesIt) {
  const std::string work_dir = FreshDirectory("replace");
  ASSERT_TRUE(WriteCheckpoint(work_dir, SampleCheckpoint(9, 1.0f)).ok());
  const Checkpoint second = SampleCheckpoint(9, 2.0f);
  const std::string dir = WriteCheckpoint(work_dir, second).value();
  EXPECT_EQ(DirectoryNames(work_dir), std::vector<std::string>{"checkpoint_000000009"});
  ExpectSameTensors(ReadCheckpoint(dir).value().model, second.model);
}

TEST(CheckpointTest, AbandonedWriterLeavesNothing) {
  const std::string work_dir = FreshDirectory("abandoned");
  {
    CheckpointWriter writer = CheckpointWriter::Create(work_dir, 3).value();
    ASSERT_TRUE(writer.AddFile(kStateFile, "update: 3").ok());
  }
  EXPECT_TRUE(DirectoryNames(work_dir).empty());
}

TEST(CheckpointTest, CheckpointWithoutOptimizerReadsWithEmptyOptimizer) {
  Checkpoint averaged = SampleCheckpoint(4);
  averaged.optimizer.clear();
  const std::string dir = WriteCheckpoint(FreshDirectory("no_optimizer"), averaged).value();
  absl::StatusOr<Checkpoint> read = ReadCheckpoint(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->optimizer.empty());
}

}  // namespace
}  // namespace tfm
