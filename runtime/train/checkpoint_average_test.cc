#include "runtime/train/checkpoint_average.h"

#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/data/file_io.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tfm::testing::FreshDirectory;
using ::tfm::testing::SampleCheckpoint;

// Three checkpoints whose weights differ (seeds 1, 2.5, 7), with a bf16
// tensor beside the f32 ones.
std::vector<std::string> WriteThree(const std::string& work_dir) {
  std::vector<std::string> paths;
  int64_t update = 100;
  for (float seed : {1.0f, 2.5f, 7.0f}) {
    Checkpoint checkpoint = SampleCheckpoint(update, seed);
    checkpoint.model.emplace_back(
        "decoder.scale",
        Tensor::FromVector<BFloat16>({BFloat16(seed), BFloat16(-seed)}, {2}).value());
    (*checkpoint.state.mutable_metrics())["loss"] = seed;
    checkpoint.task_files["task_seed.txt"] = absl::StrCat(seed);
    paths.push_back(WriteCheckpoint(work_dir, checkpoint).value());
    update += 100;
  }
  return paths;
}

TEST(AverageCheckpointsTest, WeightsAreTheElementwiseMean) {
  const std::string work_dir = FreshDirectory("average");
  const std::vector<std::string> paths = WriteThree(work_dir);
  const std::string out = work_dir + "/averaged_last3";
  ASSERT_TRUE(AverageCheckpoints(paths, out).ok());

  std::vector<Checkpoint> inputs;
  for (const std::string& path : paths) inputs.push_back(ReadCheckpoint(path).value());
  absl::StatusOr<Checkpoint> averaged = ReadCheckpoint(out);
  ASSERT_TRUE(averaged.ok()) << averaged.status();
  ASSERT_EQ(averaged->model.size(), inputs[0].model.size());
  // Values as floats, whatever the tensor's type.
  auto floats = [](const Tensor& tensor) {
    if (tensor.dtype() == DType::kF32) return tensor.ToVector<float>();
    std::vector<float> values;
    for (BFloat16 value : tensor.ToVector<BFloat16>()) values.push_back(static_cast<float>(value));
    return values;
  };
  for (size_t t = 0; t < averaged->model.size(); ++t) {
    const auto& [name, mean] = averaged->model[t];
    EXPECT_EQ(name, inputs[0].model[t].first);
    const std::vector<float> actual = floats(mean);
    for (size_t i = 0; i < actual.size(); ++i) {
      double sum = 0;
      for (const Checkpoint& input : inputs) sum += floats(input.model[t].second)[i];
      const float expected = static_cast<float>(sum / 3);
      // bf16 results are the double mean rounded once more, to bf16.
      EXPECT_EQ(actual[i],
                mean.dtype() == DType::kF32 ? expected : static_cast<float>(BFloat16(expected)))
          << name << " " << i;
    }
  }
  // Described by the newest checkpoint; not resumable.
  EXPECT_TRUE(averaged->optimizer.empty());
  EXPECT_EQ(averaged->state.update(), 300);
  EXPECT_EQ(averaged->state.metrics().at("loss"), 7.0);
  EXPECT_EQ(std::vector<std::string>(averaged->state.averaged_from().begin(),
                                     averaged->state.averaged_from().end()),
            paths);
  EXPECT_EQ(averaged->vocabulary, inputs[2].vocabulary);
  EXPECT_EQ(averaged->task_files, inputs[2].task_files);
  EXPECT_EQ(averaged->task_files.at("task_seed.txt"), "7");
}

// The mean PyTorch computes from the same files (as fairseq's
// average_checkpoints.py does, in float64 here) agrees with ours.
TEST(AverageCheckpointsTest, AgreesWithTorchMeanOfTheSameFiles) {
  const std::string work_dir = FreshDirectory("average_torch");
  const std::vector<std::string> paths = WriteThree(work_dir);
  const std::string out = work_dir + "/averaged";
  ASSERT_TRUE(AverageCheckpoints(paths, out).ok());
  absl::StatusOr<std::string> result = testing::RunPeerPython(R"(
import sys, torch
from safetensors.torch import load_file
inputs = [load_file(p + "/model.safetensors") for p in sys.argv[1:-1]]
ours = load_file(sys.argv[-1] + "/model.safetensors")
assert sorted(ours) == sorted(inputs[0]), (sorted(ours), sorted(inputs[0]))
for name, tensor in ours.items():
    mean = sum(x[name].double() for x in inputs) / len(inputs)
    assert tensor.dtype == inputs[0][name].dtype, name
    assert torch.equal(tensor, mean.to(tensor.dtype)), (name, tensor, mean)
print("ok", len(ours))
)",
                                                              {paths[0], paths[1], paths[2], out});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "ok 3\n");
}

TEST(AverageCheckpointsTest, MismatchedCheckpointsNameTheFile) {
  const std::string work_dir = FreshDirectory("average_mismatch");
  Checkpoint small = SampleCheckpoint(10);
  Checkpoint other_config = SampleCheckpoint(20);
  other_config.config.mutable_model()->set_num_heads(4);
  Checkpoint other_shape = SampleCheckpoint(30);
  other_shape.model[1].second = Tensor::Zeros({3, 1}, DType::kF32).value();
  Checkpoint other_vocabulary = SampleCheckpoint(40);
  other_vocabulary.vocabulary = testing::SentencePieceModelBytes({"<pad>"});
  const std::string a = WriteCheckpoint(work_dir, small).value();
  const std::string b = WriteCheckpoint(work_dir, other_config).value();
  const std::string c = WriteCheckpoint(work_dir, other_shape).value();
  const std::string d = WriteCheckpoint(work_dir, other_vocabulary).value();
  const std::string out = work_dir + "/out";

  EXPECT_THAT(AverageCheckpoints({b, a}, out).message(),
              AllOf(HasSubstr(b + "/config.pbtxt"), HasSubstr("model.num_heads")));
  EXPECT_THAT(AverageCheckpoints({c, a}, out).message(),
              AllOf(HasSubstr(c + "/model.safetensors"), HasSubstr("f32[3, 1]")));
  EXPECT_THAT(AverageCheckpoints({d, a}, out).message(),
              AllOf(HasSubstr(d + "/vocabulary.model"), HasSubstr("1 pieces")));
  EXPECT_FALSE(AverageCheckpoints({}, out).ok());
  EXPECT_FALSE(std::filesystem::exists(out));  // Failures leave no output.
}

TEST(AverageCheckpointsTest, CorruptInputIsRefused) {
  const std::string work_dir = FreshDirectory("average_corrupt");
  const std::string a = WriteCheckpoint(work_dir, SampleCheckpoint(1)).value();
  const std::string b = WriteCheckpoint(work_dir, SampleCheckpoint(2)).value();
  std::filesystem::resize_file(a + "/model.safetensors", 20);
  absl::Status status = AverageCheckpoints({a, b}, work_dir + "/out");
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(), HasSubstr(a + "/model.safetensors"));
}

// A member with a NaN weight (its checksums intact) is refused naming it,
// and the average already there stays.
TEST(AverageCheckpointsTest, NonFiniteMemberIsRefusedAndTheOldAverageKept) {
  const std::string work_dir = FreshDirectory("average_nan");
  const std::vector<std::string> paths = WriteThree(work_dir);
  const std::string out = work_dir + "/checkpoint_average";
  ASSERT_TRUE(AverageCheckpoints(paths, out).ok());
  const std::string before = ReadFileToString(out + "/model.safetensors").value();
  Checkpoint poisoned = SampleCheckpoint(400, 3.0f);
  poisoned.model.emplace_back(
      "decoder.scale", Tensor::FromVector<BFloat16>({BFloat16(1), BFloat16(2)}, {2}).value());
  poisoned.model[0].second.data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
  const std::string bad = WriteCheckpoint(work_dir, poisoned).value();
  const absl::Status status = AverageCheckpoints({paths[1], paths[2], bad}, out);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(status.message(), HasSubstr(bad + "/model.safetensors: tensor '" +
                                          poisoned.model[0].first + "' holds 1 non-finite value"));
  EXPECT_EQ(ReadFileToString(out + "/model.safetensors").value(), before);
}

}  // namespace
}  // namespace tfm
