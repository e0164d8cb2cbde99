#include "ops/cross_entropy/cross_entropy.h"

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

Tensor Scalar(float value) { return *Tensor::FromVector<float>({value}, {}); }

TEST(CrossEntropyTest, TorchParityWithPaddingAndSmoothing) {
  const int64_t n = 37, vocab = 1003;  // Vocabulary not a multiple of 8.
  const Tensor logits = *RandomNormal({n, vocab}, {8, 0, 0}, 0.0f, 3.0f);
  std::vector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = i % 5 == 0 ? 1 : (i * 131) % vocab;
  const Tensor targets = *Tensor::FromVector<int64_t>(values, {n});
  const CrossEntropyOptions options{.epsilon = 0.1f, .padding_index = 1};
  CrossEntropyOutput out = *LabelSmoothedCrossEntropy(logits, targets, options);
  const Tensor d_loss = Scalar(0.5f);
  Tensor d_logits = *LabelSmoothedCrossEntropyBackward(logits, targets, out.lse, d_loss, options);
  absl::StatusOr<testing::NamedTensors> ref =
      testing::TorchReference(R"py(
      x = logits.double()
      loss = F.cross_entropy(x, targets, ignore_index=1, label_smoothing=0.1, reduction='sum')
      nll = F.nll_loss(F.log_softmax(x, -1), targets, ignore_index=1, reduction='sum')
      count = (targets != 1).sum()
      d_logits, = grads(loss, d_loss.double(), [logits])
  )py",
                              {{"logits", logits}, {"targets", targets}, {"d_loss", d_loss}},
                              {"loss", "nll", "count", "d_logits"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  // The peer hands 0-d results back as [1].
  EXPECT_TRUE(testing::AllClose(*out.loss.Reshape({1}), ref->at("loss")));
  EXPECT_TRUE(testing::AllClose(*out.nll.Reshape({1}), ref->at("nll")));
  EXPECT_EQ(out.count.ToVector<int64_t>(), ref->at("count").ToVector<int64_t>());
  EXPECT_TRUE(testing::AllClose(d_logits, ref->at("d_logits")));
  // i32 targets give the same numbers.
  std::vector<int32_t> narrow(values.begin(), values.end());
  EXPECT_EQ(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int32_t>(narrow, {n}), options)
                ->loss.ToVector<float>(),
            out.loss.ToVector<float>());
}

TEST(CrossEntropyTest, GradientMatchesFiniteDifferences) {
  const Tensor targets = *Tensor::FromVector<int32_t>({2, 0, 6, 3, 6}, {5});
  const CrossEntropyOptions options{.epsilon = 0.2f, .padding_index = 3};
  testing::ForwardFn forward =
      [&](const std::vector<Tensor>& in) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<CrossEntropyOutput> out = LabelSmoothedCrossEntropy(in[0], targets, options);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{out->loss, out->lse};
  };
  testing::BackwardFn backward =
      [&](const std::vector<Tensor>& in, const std::vector<Tensor>& out,
          const std::vector<Tensor>& d_out) -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> d_logits =
        LabelSmoothedCrossEntropyBackward(in[0], targets, out[1], d_out[0], options);
    if (!d_logits.ok()) return d_logits.status();
    return std::vector<Tensor>{*d_logits};
  };
  EXPECT_TRUE(testing::CheckGradients(forward, backward,
                                      {*RandomNormal({5, 7}, {8, 1, 0}, 0.0f, 1.0f)},
                                      testing::GradientCheckOptions{.outputs_in_loss = {0}}));
}

TEST(CrossEntropyTest, OutOfRangeTargetIsInvalidArgument) {
  const Tensor logits = *RandomNormal({2, 4}, {8, 0, 0}, 0.0f, 1.0f);
  absl::Status status =
      LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1, 4}, {2})).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("label_smoothed_cross_entropy: target 4 of row 1"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("f32[2, 4]"), std::string::npos);
  EXPECT_FALSE(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1}, {1})).ok());
  EXPECT_FALSE(LabelSmoothedCrossEntropy(logits, *Tensor::FromVector<int64_t>({1, 2}, {2}),
                                         {.epsilon = 1.5f})
                   .ok());
}

}  // namespace
}  // namespace tfm
