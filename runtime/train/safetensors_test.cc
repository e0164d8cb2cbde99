#include "runtime/train/safetensors.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "core/data/file_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

template <typename T>
Tensor Make(std::vector<T> values, const Shape& shape) {
  return Tensor::FromVector<T>(values, shape).value();
}

NamedTensors SampleTensors() {
  return {{"encoder.layers.0.weight",
           Make<float>({1.5f, -2.0f, 3.25f, 0.0f, 0.0078125f, 1048576.0f}, {2, 3})},
          {"step", Make<int64_t>({int64_t{1} << 40}, {})},
          {"ids", Make<int32_t>({-1, 7}, {2})},
          {"empty", Make<float>({}, {0, 4})},
          {"half", Make<BFloat16>({BFloat16(0.5f), BFloat16(-3.0f)}, {2, 1})}};
}

void ExpectSameBytes(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(std::string(static_cast<const char*>(a.raw_data()), a.nbytes()),
            std::string(static_cast<const char*>(b.raw_data()), b.nbytes()));
}

TEST(SafetensorsTest, RoundTripsTensorsAndMetadata) {
  const std::string path = TempPath("round_trip.safetensors");
  const NamedTensors tensors = SampleTensors();
  ASSERT_TRUE(WriteSafetensors(path, tensors, {{"format", "pt"}, {"note", "quote\" \\ é"}}).ok());
  absl::StatusOr<SafetensorsReader> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->metadata().at("note"), "quote\" \\ é");
  ASSERT_EQ(reader->specs().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(reader->specs()[i].name, tensors[i].first);  // File order = write order.
    absl::StatusOr<Tensor> read = reader->Read(tensors[i].first);
    ASSERT_TRUE(read.ok()) << read.status();
    ExpectSameBytes(*read, tensors[i].second);
  }
  EXPECT_EQ(reader->Read("missing").status().code(), absl::StatusCode::kNotFound);
}

// Interop: PyTorch's safetensors loader reads what we write, values intact.
TEST(SafetensorsTest, PythonSafetensorsReadsOurFile) {
  const std::string path = TempPath("for_python.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, SampleTensors(), {{"format", "pt"}}).ok());
  absl::StatusOr<std::string> out = testing::RunPeerPython(R"(
import sys
from safetensors import safe_open
from safetensors.torch import load_file
tensors = load_file(sys.argv[1])
with safe_open(sys.argv[1], framework="pt") as f:
    print("metadata", f.metadata()["format"])
for name in sorted(tensors):
    t = tensors[name]
    print(name, str(t.dtype), list(t.shape), [repr(float(v)) for v in t.flatten().tolist()])
)",
                                                           {path});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "metadata pt\n"
            "empty torch.float32 [0, 4] []\n"
            "encoder.layers.0.weight torch.float32 [2, 3] ['1.5', '-2.0', '3.25', '0.0', "
            "'0.0078125', '1048576.0']\n"
            "half torch.bfloat16 [2, 1] ['0.5', '-3.0']\n"
            "ids torch.int32 [2] ['-1.0', '7.0']\n"
            "step torch.int64 [] ['1099511627776.0']\n");
}

TEST(SafetensorsTest, ReadsAFileWrittenByPython) {
  const std::string path = TempPath("from_python.safetensors");
  absl::StatusOr<std::string> out = testing::RunPeerPython(R"(
import sys, torch
from safetensors.torch import save_file
torch.manual_seed(0)
tensors = {"b": torch.randn(3, 5), "a": torch.arange(4, dtype=torch.int64).reshape(2, 2),
           "h": torch.tensor([1.0, -0.25], dtype=torch.float16)}
save_file(tensors, sys.argv[1], metadata={"who": "python"})
print(" ".join(repr(v) for v in tensors["b"].flatten().tolist()))
)",
                                                           {path});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> expected_b;
  for (absl::string_view word : absl::StrSplit(absl::StripAsciiWhitespace(*out), ' ')) {
    expected_b.push_back(std::stof(std::string(word)));
  }
  absl::StatusOr<SafetensorsReader> reader = SafetensorsReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ(reader->metadata().at("who"), "python");
  Tensor b = reader->Read("b").value();
  EXPECT_EQ(b.shape(), Shape({3, 5}));
  EXPECT_EQ(b.ToVector<float>(), expected_b);
  EXPECT_EQ(reader->Read("a").value().ToVector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  Tensor h = reader->Read("h").value();
  ASSERT_EQ(h.dtype(), DType::kF16);
  EXPECT_EQ(static_cast<float>(h.ToVector<Half>()[1]), -0.25f);
}

TEST(SafetensorsTest, TruncatedFileIsDataLossNamingTheFile) {
  const std::string path = TempPath("truncated.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, SampleTensors()).ok());
  std::string bytes = ReadFileToString(path).value();
  ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, bytes.size() - 3)).ok());
  absl::StatusOr<SafetensorsReader> reader = SafetensorsReader::Open(path);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(reader.status().message(), HasSubstr(path));
  EXPECT_THAT(reader.status().message(), HasSubstr("truncated"));

  ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, 5)).ok());
  EXPECT_EQ(SafetensorsReader::Open(path).status().code(), absl::StatusCode::kDataLoss);
}

TEST(SafetensorsTest, DamagedHeaderIsDataLoss) {
  const std::string path = TempPath("damaged.safetensors");
  ASSERT_TRUE(WriteSafetensors(path, SampleTensors()).ok());
  const std::string bytes = ReadFileToString(path).value();
  std::string huge_length = bytes;
  huge_length[6] = '\x7f';
  ASSERT_TRUE(WriteFileAtomically(path, huge_length).ok());
  EXPECT_THAT(SafetensorsReader::Open(path).status().message(), HasSubstr("header length"));
  std::string not_json = bytes;
  not_json[8] = '[';
  ASSERT_TRUE(WriteFileAtomically(path, not_json).ok());
  EXPECT_THAT(SafetensorsReader::Open(path).status().message(), HasSubstr("not JSON"));
  std::string extra = bytes + "xyz";
  ASSERT_TRUE(WriteFileAtomically(path, extra).ok());
  EXPECT_THAT(SafetensorsReader::Open(path).status().message(), HasSubstr("after the last"));
}

TEST(SafetensorsTest, WriterChecksTensorsAndLeavesNoPartialFile) {
  const std::string path = TempPath("partial.safetensors");
  absl::StatusOr<SafetensorsWriter> writer =
      SafetensorsWriter::Create(path, {{"w", DType::kF32, {2}}, {"v", DType::kF32, {1}}});
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::Status wrong = writer->Append(Make<float>({1, 2, 3}, {3}));
  EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("\"w\""));
  ASSERT_TRUE(writer->Append(Make<float>({1, 2}, {2})).ok());
  EXPECT_FALSE(writer->Commit().ok());
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // Never renamed into place.
  EXPECT_FALSE(
      SafetensorsWriter::Create(path, {{"w", DType::kF32, {1}}, {"w", DType::kF32, {1}}}).ok());
}

}  // namespace
}  // namespace tfm
