// SetDecodingPrecision (--quantize) on small models built here (no
// checkpoint or data: the GPU machine runs this from a bundle).
#include "tasks/common/trained_model.h"

#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

std::unique_ptr<Transformer> TinyModel(const Device& device) {
  config::ModelConfig model;
  model.set_num_encoder_layers(1);
  model.set_num_decoder_layers(1);
  model.set_d_model(16);
  model.set_d_ff(32);
  model.set_num_heads(2);
  model.set_d_k(8);
  model.set_d_v(8);
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, VocabularySpec{20, 0, 2, 3}, device, 5);
  EXPECT_TRUE(transformer.ok()) << transformer.status();
  return transformer.ok() ? *std::move(transformer) : nullptr;
}

// Every member follows, and the log says so once per change.
TEST(TrainedModelTest, QuantizeInt8ReachesEveryMember) {
  std::unique_ptr<Transformer> first = TinyModel(Device::Cpu()), second = TinyModel(Device::Cpu());
  const std::vector<Transformer*> members = {first.get(), second.get()};
  std::ostringstream log;
  ASSERT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::INT8, &log).ok());
  EXPECT_EQ(first->decoding_precision(), DecodingPrecision::kInt8);
  EXPECT_EQ(second->decoding_precision(), DecodingPrecision::kInt8);
  EXPECT_NE(log.str().find("decoding with int8 weights"), std::string::npos) << log.str();
  ASSERT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::NONE, &log).ok());
  EXPECT_EQ(second->decoding_precision(), DecodingPrecision::kF32);
  EXPECT_NE(log.str().find("decoding with f32 weights"), std::string::npos) << log.str();
}

// The int8 kernels are the CPU's: asking for them with the weights on a GPU
// is an error naming the device, not a silent f32 decode.
TEST(TrainedModelTest, QuantizeInt8WithWeightsOnAGpuIsAnError) {
  TFM_SKIP_WITHOUT_GPU();
  std::unique_ptr<Transformer> cpu = TinyModel(Device::Cpu()), gpu = TinyModel(Device::Cuda(0));
  ASSERT_NE(gpu, nullptr);
  const std::vector<Transformer*> members = {cpu.get(), gpu.get()};
  const absl::Status status = SetDecodingPrecision(members, config::DecodeConfig::INT8, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("weights are on cuda:0"), std::string::npos) << status;
  // Nothing changed: no member is left int8.
  EXPECT_EQ(cpu->decoding_precision(), DecodingPrecision::kF32);
  EXPECT_TRUE(SetDecodingPrecision(members, config::DecodeConfig::NONE, nullptr).ok());
  std::printf("[ measured ] int8 with the weights on cuda:0: %s\n", status.ToString().c_str());
}

}  // namespace
}  // namespace tfm
