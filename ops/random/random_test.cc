#include "ops/random/random.h"

#include <cmath>
#include <cstring>

#include "core/philox.h"
#include "core/tensor_copy.h"
#include "gtest/gtest.h"
#include "tests/util/gpu.h"

namespace tfm {
namespace {

TEST(RandomTest, UniformFollowsThePhiloxLayout) {
  const PhiloxState state{123, 4, 10};
  Tensor u = *RandomUniform({7, 5}, state, 0.0f, 1.0f);
  EXPECT_EQ(u.shape(), Shape({7, 5}));
  for (int i = 0; i < 35; ++i) {
    const philox::Uint4 block = philox::Block(123, 4, 10 + i / 4);
    EXPECT_EQ(u.data<float>()[i], philox::ToUniform(philox::Lane(block, i % 4))) << i;
  }
}

TEST(RandomTest, SameStateSameTensorOtherStreamDiffers) {
  Tensor a = *RandomNormal({1000}, {5, 0, 0}, 0.0f, 1.0f);
  Tensor b = *RandomNormal({1000}, {5, 0, 0}, 0.0f, 1.0f);
  Tensor c = *RandomNormal({1000}, {5, 1, 0}, 0.0f, 1.0f);
  EXPECT_EQ(a.ToVector<float>(), b.ToVector<float>());
  EXPECT_NE(a.ToVector<float>(), c.ToVector<float>());
}

TEST(RandomTest, BadParametersAreErrors) {
  EXPECT_FALSE(RandomUniform({3}, {1, 0, 0}, 2.0f, 1.0f).ok());
  absl::Status status = RandomNormal({3}, {1, 0, 0}, 0.0f, -1.0f).status();
  EXPECT_NE(status.message().find("random_normal: stddev < 0"), std::string::npos);
  EXPECT_FALSE(RandomNormal({3}, {1, 0, 0}, NAN, 1.0f).ok());
  EXPECT_FALSE(RandomUniform({-3}, {1, 0, 0}, 0.0f, 1.0f).ok());
}

// The point of Philox: the GPU draws exactly the CPU's numbers.
TEST(RandomTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  const PhiloxState state{2024, 3, 77};
  const Shape shape = {333, 77};  // Not a multiple of 4: exercises the tail.
  Tensor cpu_uniform = *RandomUniform(shape, state, -2.0f, 5.0f);
  Tensor gpu_uniform = *CopyToDevice(
      *RandomUniform(shape, state, -2.0f, 5.0f, Device::Cuda(0)), Device::Cpu());
  for (int64_t i = 0; i < cpu_uniform.num_elements(); ++i) {
    ASSERT_EQ(cpu_uniform.data<float>()[i], gpu_uniform.data<float>()[i]) << "element " << i;
  }
  Tensor cpu_normal = *RandomNormal(shape, state, 1.0f, 3.0f);
  Tensor gpu_normal = *CopyToDevice(
      *RandomNormal(shape, state, 1.0f, 3.0f, Device::Cuda(0)), Device::Cpu());
  // log/sin/cos may differ in the last bits between libm and CUDA.
  for (int64_t i = 0; i < cpu_normal.num_elements(); ++i) {
    ASSERT_NEAR(cpu_normal.data<float>()[i], gpu_normal.data<float>()[i],
                1e-5f * (1.0f + std::fabs(cpu_normal.data<float>()[i])))
        << i;
  }
  Tensor other_stream = *CopyToDevice(
      *RandomUniform(shape, {2024, 4, 77}, -2.0f, 5.0f, Device::Cuda(0)), Device::Cpu());
  EXPECT_NE(std::memcmp(other_stream.raw_data(), gpu_uniform.raw_data(), cpu_uniform.nbytes()),
            0);
}

}  // namespace
}  // namespace tfm
