#include "ops/linear/linear.h"

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::CheckGradients;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::SumTolerance;
using ::tfm::testing::TorchReference;

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{11, stream, 0}, -1.0f, 1.0f);
}

absl::StatusOr<std::vector<Tensor>> Forward(const std::vector<Tensor>& in) {
  absl::StatusOr<Tensor> out =
      in.size() == 3 ? Linear(in[0], in[1], in[2]) : Linear(in[0], in[1]);
  if (!out.ok()) return out.status();
  return std::vector<Tensor>{*out};
}

absl::StatusOr<std::vector<Tensor>> Backward(const std::vector<Tensor>& in,
                                             const std::vector<Tensor>&,
                                             const std::vector<Tensor>& dout) {
  absl::StatusOr<LinearGrads> grads = LinearBackward(dout[0], in[0], in[1], in.size() == 3);
  if (!grads.ok()) return grads.status();
  std::vector<Tensor> result = {grads->dx, grads->dweight};
  if (in.size() == 3) result.push_back(grads->dbias);
  return result;
}

TEST(LinearTest, SmallExample) {
  const Tensor x = *Tensor::FromVector<float>({1, 2}, {1, 2});
  const Tensor w = *Tensor::FromVector<float>({1, 0, 1, 1, 0, -1}, {3, 2});
  const Tensor b = *Tensor::FromVector<float>({0.5f, 0, 1}, {3});
  EXPECT_EQ(Linear(x, w, b)->ToVector<float>(), (std::vector<float>{1.5f, 3, -1}));
  EXPECT_EQ(Linear(x, w)->ToVector<float>(), (std::vector<float>{1, 3, -2}));
}

TEST(LinearTest, Gradients) {
  const Tensor x = Random({2, 3, 4}, 1), w = Random({5, 4}, 2), b = Random({5}, 3);
  EXPECT_TRUE(CheckGradients(Forward, Backward, {x, w, b}));
  EXPECT_TRUE(CheckGradients(Forward, Backward, {x, w}));
}

// Sums over in = 512 and over 300 rows: SumTolerance (see torch_parity.h).
TEST(LinearTest, MatchesTorch) {
  NamedTensors inputs = {
      {"x1", Random({2, 3, 7}, 1)},     {"w1", Random({5, 7}, 2)},  {"b1", Random({5}, 3)},
      {"dy1", Random({2, 3, 5}, 4)},    {"x2", Random({300, 512}, 5)},
      {"w2", Random({96, 512}, 6)},     {"b2", Random({96}, 7)},    {"dy2", Random({300, 96}, 8)},
  };
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      y1 = F.linear(x1, w1, b1)
      dx1, dw1, db1 = grads(y1, dy1, [x1, w1, b1])
      y2 = F.linear(x2, w2, b2)
      dx2, dw2, db2 = grads(y2, dy2, [x2, w2, b2])
      y2n = F.linear(x2, w2)
  )py", inputs, {"y1", "dx1", "dw1", "db1", "y2", "dx2", "dw2", "db2", "y2n"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const char* i : {"1", "2"}) {
    const auto in = [&](const std::string& name) { return inputs.at(name + i); };
    const auto expected = [&](const std::string& name) { return ref->at(name + i); };
    absl::StatusOr<Tensor> y = Linear(in("x"), in("w"), in("b"));
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<LinearGrads> grads = LinearBackward(in("dy"), in("x"), in("w"));
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_TRUE(AllClose(*y, expected("y"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dx, expected("dx"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dweight, expected("dw"), SumTolerance())) << i;
    EXPECT_TRUE(AllClose(grads->dbias, expected("db"), SumTolerance())) << i;
  }
  EXPECT_TRUE(AllClose(*Linear(inputs.at("x2"), inputs.at("w2")), ref->at("y2n"), SumTolerance()));
  absl::StatusOr<LinearGrads> no_bias =
      LinearBackward(inputs.at("dy2"), inputs.at("x2"), inputs.at("w2"), false);
  ASSERT_TRUE(no_bias.ok()) << no_bias.status();
  EXPECT_FALSE(no_bias->dbias.defined());
  EXPECT_TRUE(AllClose(no_bias->dweight, ref->at("dw2"), SumTolerance()));
}

TEST(LinearTest, BadArgumentsNameTheOpAndShapes) {
  const Tensor x = Random({2, 3}, 1), w = Random({4, 3}, 2);
  absl::Status features = Linear(x, Random({4, 5}, 2)).status();
  EXPECT_EQ(features.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(features.message().find("linear_no_bias: x's last extent 3"), std::string::npos)
      << features;
  EXPECT_NE(features.message().find("f32[4, 5]"), std::string::npos) << features;
  EXPECT_EQ(Linear(x, w, Random({3}, 3)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x, Random({4, 3, 1}, 2)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Linear(x, *Tensor::Zeros({4, 3}, DType::kI32)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LinearBackward(Random({2, 5}, 4), x, w).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
