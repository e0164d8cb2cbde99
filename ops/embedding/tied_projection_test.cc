#include "ops/embedding/tied_projection.h"

#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/gradient_check.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

TEST(TiedProjectionTest, TorchParityForwardAndBackward) {
  const Tensor h = *RandomNormal({3, 7, 32}, {4, 0, 0}, 0.0f, 1.0f);
  const Tensor table = *RandomNormal({101, 32}, {4, 1, 0}, 0.0f, 1.0f);
  const Tensor d_logits = *RandomNormal({3, 7, 101}, {4, 2, 0}, 0.0f, 1.0f);
  Tensor logits = *TiedProjection(h, table);
  TiedProjectionGrads grads = *TiedProjectionBackward(h, table, d_logits);
  absl::StatusOr<testing::NamedTensors> ref = testing::TorchReference(R"py(
      logits = h.double() @ table.double().t()
      dh, dtable = grads(logits, d_logits.double(), [h, table])
  )py", {{"h", h}, {"table", table}, {"d_logits", d_logits}}, {"logits", "dh", "dtable"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_TRUE(testing::AllClose(logits, ref->at("logits"), testing::SumTolerance()));
  EXPECT_TRUE(testing::AllClose(grads.dh, ref->at("dh"), testing::SumTolerance()));
  EXPECT_TRUE(testing::AllClose(grads.dtable, ref->at("dtable"), testing::SumTolerance()));
}

TEST(TiedProjectionTest, GradientsMatchFiniteDifferences) {
  testing::ForwardFn forward = [](const std::vector<Tensor>& in)
      -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> out = TiedProjection(in[0], in[1]);
    if (!out.ok()) return out.status();
    return std::vector<Tensor>{*out};
  };
  testing::BackwardFn backward = [](const std::vector<Tensor>& in, const std::vector<Tensor>&,
                                    const std::vector<Tensor>& d_out)
      -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<TiedProjectionGrads> grads = TiedProjectionBackward(in[0], in[1], d_out[0]);
    if (!grads.ok()) return grads.status();
    return std::vector<Tensor>{grads->dh, grads->dtable};
  };
  EXPECT_TRUE(testing::CheckGradients(forward, backward,
                                      {*RandomNormal({4, 6}, {4, 0, 0}, 0.0f, 1.0f),
                                       *RandomNormal({9, 6}, {4, 1, 0}, 0.0f, 1.0f)}));
}

// Empty sums give zeros, not whatever the allocator handed out.
TEST(TiedProjectionTest, EmptyExtentsGiveZeros) {
  const Tensor h = *RandomNormal({2, 3, 4}, {4, 0, 0}, 0.0f, 1.0f);
  // d = 0: logits [2, 3, 5] are empty sums.
  absl::StatusOr<Tensor> logits =
      TiedProjection(*Tensor::Empty({2, 3, 0}, DType::kF32), *Tensor::Empty({5, 0}, DType::kF32));
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_EQ(logits->shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(logits->ToVector<float>(), std::vector<float>(30, 0.0f));
  // vocab = 0: dh sums over no vocabulary entries.
  absl::StatusOr<TiedProjectionGrads> no_vocab = TiedProjectionBackward(
      h, *Tensor::Empty({0, 4}, DType::kF32), *Tensor::Empty({2, 3, 0}, DType::kF32));
  ASSERT_TRUE(no_vocab.ok()) << no_vocab.status();
  EXPECT_EQ(no_vocab->dh.ToVector<float>(), std::vector<float>(24, 0.0f));
  // No rows: dtable sums over no tokens.
  absl::StatusOr<TiedProjectionGrads> no_rows =
      TiedProjectionBackward(*Tensor::Empty({0, 4}, DType::kF32),
                             *RandomNormal({5, 4}, {4, 1, 0}, 0.0f, 1.0f),
                             *Tensor::Empty({0, 5}, DType::kF32));
  ASSERT_TRUE(no_rows.ok()) << no_rows.status();
  EXPECT_EQ(no_rows->dtable.ToVector<float>(), std::vector<float>(20, 0.0f));
}

TEST(TiedProjectionTest, ShapeMismatchIsInvalidArgument) {
  absl::Status status = TiedProjection(*RandomNormal({4, 6}, {4, 0, 0}, 0.0f, 1.0f),
                                       *RandomNormal({9, 5}, {4, 1, 0}, 0.0f, 1.0f))
                            .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("tied_projection: "), std::string::npos);
  EXPECT_NE(status.message().find("f32[9, 5]"), std::string::npos);
}

}  // namespace
}  // namespace tfm
