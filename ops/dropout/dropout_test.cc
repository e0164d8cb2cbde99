#include "ops/dropout/dropout.h"

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::CheckGradients;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::TorchReference;

constexpr PhiloxState kState{21, 3, 1000};

Tensor Random(const Shape& shape, uint64_t stream) {
  return *RandomUniform(shape, PhiloxState{19, stream, 0}, -1.0f, 1.0f);
}

// The uniforms dropout compares against p: those of random_uniform with the
// same state, by the Philox layout contract (see dropout.h).
Tensor Uniforms(const Shape& shape) { return *RandomUniform(shape, kState, 0.0f, 1.0f); }

TEST(DropoutTest, IdentityAtZeroAndEmptyAtOne) {
  const Tensor x = Random({5, 7}, 1);
  absl::StatusOr<Tensor> same = Dropout(x, 0.0, kState);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->SharesBufferWith(x));
  EXPECT_EQ(Dropout(x, 1.0, kState)->ToVector<float>(), std::vector<float>(35, 0.0f));
}

TEST(DropoutTest, DropsAboutPAndIsReproducible) {
  const Tensor x = *RandomUniform({100003}, kState, 1.0f, 2.0f);  // Never 0.
  const Tensor y = *Dropout(x, 0.3, kState);
  int64_t dropped = 0;
  for (float v : y.span<float>()) dropped += v == 0.0f;
  EXPECT_NEAR(dropped / 100003.0, 0.3, 0.005);
  EXPECT_EQ(Dropout(x, 0.3, kState)->ToVector<float>(), y.ToVector<float>());
  EXPECT_NE(Dropout(x, 0.3, PhiloxState{21, 3, 1001})->ToVector<float>(), y.ToVector<float>());
}

TEST(DropoutTest, Gradients) {
  auto forward = [](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = Dropout(in[0], 0.4, kState);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  auto backward = [](const std::vector<Tensor>&, const std::vector<Tensor>&,
                     const std::vector<Tensor>& dout) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> dx = DropoutBackward(dout[0], 0.4, kState);
    if (!dx.ok()) return dx.status();
    return std::vector<Tensor>{*dx};
  };
  EXPECT_TRUE(CheckGradients(forward, backward, {Random({6, 11}, 1)}));
}

// PyTorch's generator differs from Philox, so the peer gets our uniforms
// and applies its own masking and scaling formula; odd sizes check the
// partial last block.
TEST(DropoutTest, MatchesTorchGivenTheUniforms) {
  NamedTensors inputs = {{"x1", Random({3, 5}, 1)},    {"dy1", Random({3, 5}, 2)},
                         {"u1", Uniforms({3, 5})},     {"x2", Random({513, 129}, 3)},
                         {"dy2", Random({513, 129}, 4)}, {"u2", Uniforms({513, 129})}};
  absl::StatusOr<NamedTensors> ref = TorchReference(R"py(
      p = 0.1
      y1 = x1 * (u1 >= p) / (1 - p)
      dx1, = grads(y1, dy1, [x1])
      y2 = x2 * (u2 >= p) / (1 - p)
      dx2, = grads(y2, dy2, [x2])
  )py", inputs, {"y1", "dx1", "y2", "dx2"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (const std::string i : {"1", "2"}) {
    absl::StatusOr<Tensor> y = Dropout(inputs.at("x" + i), 0.1, kState);
    ASSERT_TRUE(y.ok()) << y.status();
    absl::StatusOr<Tensor> dx = DropoutBackward(inputs.at("dy" + i), 0.1, kState);
    ASSERT_TRUE(dx.ok()) << dx.status();
    EXPECT_TRUE(AllClose(*y, ref->at("y" + i))) << i;
    EXPECT_TRUE(AllClose(*dx, ref->at("dx" + i))) << i;
  }
}

TEST(DropoutTest, BadArgumentsNameTheOp) {
  absl::Status status = Dropout(Random({2, 3}, 1), 1.5, kState).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("dropout: p = 1.5 is not in [0, 1]"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[2, 3]"), std::string::npos) << status;
  EXPECT_EQ(Dropout(Random({2}, 1), NAN, kState).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DropoutBackward(Random({2}, 1), -0.1, kState).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
