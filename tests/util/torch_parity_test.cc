#include "tests/util/torch_parity.h"

#include "gtest/gtest.h"

namespace tfm {
namespace testing {
namespace {

TEST(TorchParityTest, ForwardAndGradients) {
  const Tensor x = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor dy = *Tensor::FromVector<float>({1, 0, -1, 2, 0.5f, 0}, {2, 3});
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y = x * x
      dx, = grads(y, dy, [x])
      n = torch.tensor(x.shape[0])
  )py", {{"x", x}, {"dy", dy}}, {"y", "dx", "n"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->at("y").ToVector<float>(), (std::vector<float>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(ref->at("dx").ToVector<float>(), (std::vector<float>{2, 0, -6, 16, 5, 0}));
  EXPECT_EQ(ref->at("n").ToVector<int64_t>(), (std::vector<int64_t>{2}));
}

TEST(TorchParityTest, SnippetErrorsCarryPythonsMessage) {
  const Tensor x = *Tensor::FromVector<float>({1}, {1});
  absl::StatusOr<NamedTensors> ref = TorchReference("y = undefined_name", {{"x", x}}, {"y"});
  ASSERT_FALSE(ref.ok());
  EXPECT_NE(ref.status().message().find("undefined_name"), std::string::npos);
  EXPECT_FALSE(TorchReference("", {{"not ok", x}}, {}).ok());
}

TEST(TorchParityTest, AllCloseReportsErrors) {
  const Tensor a = *Tensor::FromVector<float>({1, 2, 3}, {3});
  const Tensor b = *Tensor::FromVector<float>({1, 2.001f, 3}, {3});
  EXPECT_TRUE(AllClose(a, a));
  ::testing::AssertionResult result = AllClose(a, b);
  ASSERT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("max abs error"), std::string::npos);
  EXPECT_NE(std::string(result.message()).find("flat index 1"), std::string::npos);
  EXPECT_TRUE(AllClose(a, b, Tolerance{.atol = 0, .rtol = 1e-3}));
  // Against the largest magnitude: an error of 1e-3 on 3 is within 5e-4.
  const Tensor c = *Tensor::FromVector<float>({0, 1e-3f, 3}, {3});
  const Tensor d = *Tensor::FromVector<float>({1e-3f, 0, 3}, {3});
  EXPECT_FALSE(AllClose(c, d, Tolerance{.atol = 0, .rtol = 5e-4}));
  EXPECT_TRUE(AllClose(c, d, SumTolerance(5e-4)));
  EXPECT_FALSE(AllClose(a, *Tensor::FromVector<float>({1, 2, 3}, {1, 3})));
  EXPECT_FALSE(AllClose(*Tensor::FromVector<float>({NAN}, {1}),
                        *Tensor::FromVector<float>({0}, {1})));
}

}  // namespace
}  // namespace testing
}  // namespace tfm
