#include "runtime/train/stored_tensors.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "runtime/train/checkpoint_match.h"
#include "runtime/train/checkpoint_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tfm::testing::FreshDirectory;
using ::tfm::testing::SampleCheckpoint;

std::string WriteFile(const std::string& name, const NamedTensors& tensors) {
  const std::string path = FreshDirectory(name) + "/model.safetensors";
  EXPECT_TRUE(WriteSafetensors(path, tensors).ok());
  return path;
}

NamedTensors ZerosLike(const NamedTensors& tensors) {
  NamedTensors zeros;
  for (const auto& [name, tensor] : tensors) {
    zeros.emplace_back(name, Tensor::Zeros(tensor.shape(), tensor.dtype()).value());
  }
  return zeros;
}

// The load that decoding and resuming do: each destination (in another
// order than the file's) gets the file's values, in its own buffer.
TEST(StoredTensorsTest, FileTensorsAreReadIntoTheDestinationsBuffers) {
  const NamedTensors written = SampleCheckpoint(1, 2.0f).model;
  ASSERT_GE(written.size(), 2u);
  const std::string path = WriteFile("stored_read_into", written);
  absl::StatusOr<StoredTensors> stored = StoredTensors::OpenFile(path);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->path(), path);
  ASSERT_EQ(stored->specs().size(), written.size());
  for (const auto& [name, tensor] : written) {
    const TensorSpec* spec = stored->Find(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->shape, tensor.shape());
  }
  EXPECT_EQ(stored->Find("no.such.tensor"), nullptr);

  NamedTensors destination = ZerosLike(written);
  std::reverse(destination.begin(), destination.end());
  const NamedTensors handles = destination;  // Share the buffers the load must fill.
  ASSERT_TRUE(AssignTensors(*stored, &destination).ok());
  for (size_t i = 0; i < written.size(); ++i) {
    const auto& [name, tensor] = written[written.size() - 1 - i];
    SCOPED_TRACE(name);
    EXPECT_EQ(handles[i].first, name);
    EXPECT_EQ(handles[i].second.ToVector<float>(), tensor.ToVector<float>());
  }
}

TEST(StoredTensorsTest, AMisshapenDestinationIsRefusedNamingTheFileAndTensor) {
  const NamedTensors written = SampleCheckpoint(1).model;
  const std::string path = WriteFile("stored_misshapen", written);
  absl::StatusOr<StoredTensors> stored = StoredTensors::OpenFile(path);
  ASSERT_TRUE(stored.ok()) << stored.status();
  Tensor wrong = Tensor::Zeros({written[0].second.num_elements() + 1}, DType::kF32).value();
  const absl::Status status = stored->ReadInto(written[0].first, wrong);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), AllOf(HasSubstr(path), HasSubstr(written[0].first)));
  EXPECT_EQ(stored->ReadInto("no.such.tensor", wrong).code(), absl::StatusCode::kNotFound);

  // Through AssignTensors: the fit is checked before any value is read.
  NamedTensors destination = ZerosLike(written);
  destination.back().second = Tensor::Zeros({3, 7}, DType::kF32).value();
  const absl::Status misfit = AssignTensors(*stored, &destination);
  EXPECT_EQ(misfit.code(), absl::StatusCode::kFailedPrecondition) << misfit;
  EXPECT_THAT(misfit.message(),
              AllOf(HasSubstr(path), HasSubstr(written.back().first + " is f32["),
                    HasSubstr("f32[3, 7] in the model")));
  for (const float value : destination.front().second.ToVector<float>()) EXPECT_EQ(value, 0.0f);
}

// Checksums hold (the writer wrote the NaN), so only the values say the
// file is no model: read one at a time, each is still checked.
TEST(StoredTensorsTest, NonFiniteValuesInTheFileAreRefusedNamingTheTensor) {
  NamedTensors written = SampleCheckpoint(1).model;
  written[1].second.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  const std::string path = WriteFile("stored_nan", written);
  absl::StatusOr<StoredTensors> stored = StoredTensors::OpenFile(path);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_TRUE(stored->Read(written[0].first).ok());
  const absl::StatusOr<Tensor> read = stored->Read(written[1].first);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << read.status();
  NamedTensors destination = ZerosLike(written);
  const absl::Status status = AssignTensors(*stored, &destination);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(path), HasSubstr("'" + written[1].first + "' holds 1 non-finite"),
                    HasSubstr("first at element 2")));
}

// Tensors in memory are handed out as they are, not copied.
TEST(StoredTensorsTest, InMemoryTensorsShareTheirBuffers) {
  const NamedTensors tensors = SampleCheckpoint(1).model;
  const StoredTensors stored(tensors, "(in memory)");
  EXPECT_EQ(stored.specs().size(), tensors.size());
  absl::StatusOr<Tensor> read = stored.Read(tensors[0].first);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->SharesBufferWith(tensors[0].second));
  const absl::Status missing = stored.Read("absent").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("(in memory)"));
}

}  // namespace
}  // namespace tfm
