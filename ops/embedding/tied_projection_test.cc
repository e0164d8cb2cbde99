#include "ops/embedding/tied_projection.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/random/random.h"
#include "tests/util/cuda_compare.h"
#include "tests/util/gpu.h"
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

// tied_projection and its backward on GPU 0 against the f32 CPU kernel on the
// same inputs (rounded to bf16 for bf16): f32 sums are only reordered, bf16
// also rounds the result once (2^-9 relative). The shapes: the base model's
// (4096 tokens x 512 -> a 37000 vocabulary), batch-1 decoding, odd extents,
// leading axes, and empty sums (d = 0, vocab = 0, no rows).
TEST(TiedProjectionTest, CudaMatchesCpu) {
  TFM_SKIP_WITHOUT_GPU();
  struct Case {
    Shape h;
    int64_t vocab;
  };
  const Case cases[] = {
      {{4096, 512}, 37000}, {{1, 512}, 37000}, {{37, 129}, 61}, {{3, 7, 32}, 101},
      {{2, 3, 0}, 5},       {{6, 4}, 0},       {{0, 4}, 5},
  };
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
    const testing::Tolerance tolerance = testing::SumTolerance(dtype == DType::kF32 ? 1e-5 : 1e-2);
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " h ", ShapeToString(c.h), " vocab ", c.vocab));
      Shape logits_shape = c.h;
      logits_shape.back() = c.vocab;
      const Tensor h = testing::RoundedThrough(*RandomNormal(c.h, {5, 0, 0}, 0.0f, 1.0f), dtype);
      const Tensor table = testing::RoundedThrough(
          *RandomNormal({c.vocab, c.h.back()}, {5, 1, 0}, 0.0f, 1.0f), dtype);
      const Tensor d_logits =
          testing::RoundedThrough(*RandomNormal(logits_shape, {5, 2, 0}, 0.0f, 1.0f), dtype);
      const Tensor h_gpu = testing::OnCuda(testing::HostAs(h, dtype));
      const Tensor table_gpu = testing::OnCuda(testing::HostAs(table, dtype));
      absl::StatusOr<Tensor> logits = TiedProjection(h, table);
      ASSERT_TRUE(logits.ok()) << logits.status();
      absl::StatusOr<Tensor> logits_gpu = TiedProjection(h_gpu, table_gpu);
      ASSERT_TRUE(logits_gpu.ok()) << logits_gpu.status();
      EXPECT_EQ(logits_gpu->dtype(), dtype);
      EXPECT_TRUE(testing::AllClose(testing::HostF32(*logits_gpu), *logits, tolerance));
      absl::StatusOr<TiedProjectionGrads> grads = TiedProjectionBackward(h, table, d_logits);
      ASSERT_TRUE(grads.ok()) << grads.status();
      absl::StatusOr<TiedProjectionGrads> grads_gpu = TiedProjectionBackward(
          h_gpu, table_gpu, testing::OnCuda(testing::HostAs(d_logits, dtype)));
      ASSERT_TRUE(grads_gpu.ok()) << grads_gpu.status();
      EXPECT_TRUE(testing::AllClose(testing::HostF32(grads_gpu->dh), grads->dh, tolerance));
      EXPECT_TRUE(testing::AllClose(testing::HostF32(grads_gpu->dtable), grads->dtable, tolerance));
    }
  }
}

TEST(TiedProjectionTest, Bf16IsForCudaOnly) {
  const Tensor h = testing::HostAs(*RandomNormal({4, 6}, {4, 0, 0}, 0.0f, 1.0f), DType::kBF16);
  const Tensor table = testing::HostAs(*RandomNormal({9, 6}, {4, 1, 0}, 0.0f, 1.0f), DType::kBF16);
  const absl::Status status = TiedProjection(h, table).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("no kernel for CPU/bf16"), std::string::npos) << status;
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
