#include "tests/util/gradient_check.h"

#include "gtest/gtest.h"

namespace tfm {
namespace testing {
namespace {

// y = x * w (elementwise), s = sum(x): two outputs, two inputs.
absl::StatusOr<std::vector<Tensor>> Forward(const std::vector<Tensor>& in) {
  Tensor y = *Tensor::Empty(in[0].shape(), DType::kF32);
  Tensor s = *Tensor::Zeros({}, DType::kF32);
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    y.data<float>()[i] = in[0].data<float>()[i] * in[1].data<float>()[i];
    s.data<float>()[0] += in[0].data<float>()[i];
  }
  return std::vector<Tensor>{y, s};
}

BackwardFn Backward(float scale) {
  return [scale](const std::vector<Tensor>& in, const std::vector<Tensor>&,
                 const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    Tensor dx = *Tensor::Empty(in[0].shape(), DType::kF32);
    Tensor dw = *Tensor::Empty(in[0].shape(), DType::kF32);
    for (int64_t i = 0; i < dx.num_elements(); ++i) {
      const float dy = dout[0].data<float>()[i];
      dx.data<float>()[i] = scale * dy * in[1].data<float>()[i] + dout[1].data<float>()[0];
      dw.data<float>()[i] = dy * in[0].data<float>()[i];
    }
    return std::vector<Tensor>{dx, dw};
  };
}

TEST(GradientCheckTest, AcceptsTheRightGradientAndLeavesInputsAlone) {
  const Tensor x = *Tensor::FromVector<float>({0.5f, -1, 2, 0.25f}, {2, 2});
  const Tensor w = *Tensor::FromVector<float>({1, 3, -0.5f, 2}, {2, 2});
  EXPECT_TRUE(CheckGradients(Forward, Backward(1.0f), {x, w}));
  EXPECT_EQ(x.ToVector<float>(), (std::vector<float>{0.5f, -1, 2, 0.25f}));
}

TEST(GradientCheckTest, RejectsAWrongGradient) {
  const Tensor x = *Tensor::FromVector<float>({0.5f, -1, 2, 0.25f}, {2, 2});
  const Tensor w = *Tensor::FromVector<float>({1, 3, -0.5f, 2}, {2, 2});
  ::testing::AssertionResult result = CheckGradients(Forward, Backward(1.1f), {x, w});
  EXPECT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("input 0"), std::string::npos);
  // Only input 1 checked: the wrong dx goes unnoticed.
  EXPECT_TRUE(CheckGradients(Forward, Backward(1.1f), {x, w},
                             GradientCheckOptions{.inputs_to_check = {1}}));
}

TEST(GradientCheckTest, SamplesLargeInputs) {
  std::vector<float> values(5000, 0.5f);
  const Tensor x = *Tensor::FromVector<float>(values, {5000});
  EXPECT_TRUE(CheckGradients(Forward, Backward(1.0f), {x, x},
                             GradientCheckOptions{.max_elements_per_input = 16}));
}

}  // namespace
}  // namespace testing
}  // namespace tfm
