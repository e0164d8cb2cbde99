// Mixed precision's parameter handling, which runs on the CPU too (the cast
// and add ops have CPU kernels; the bf16 passes themselves need CUDA and are
// tested by tests/gpu_training_test.cc): the per-pass copies a layer reads,
// bf16 gradients summed into the f32 gradient, and a batch's first bf16
// gradients widened together after it.
#include <string>
#include <vector>

#include "core/op_profile.h"
#include "gtest/gtest.h"
#include "layers/parameter_gradients.h"
#include "layers/parameter_init.h"
#include "layers/transformer.h"

namespace tfm {
namespace {

Parameter MakeF32(const std::string& name, const std::vector<float>& values) {
  Parameter p;
  p.name = name;
  p.value = *Tensor::FromVector<float>(values, {static_cast<int64_t>(values.size())});
  p.grad = *Tensor::Zeros(p.value.shape(), DType::kF32);
  return p;
}

std::vector<float> AsF32(const Tensor& bf16) {
  std::vector<float> out;
  for (int64_t i = 0; i < bf16.num_elements(); ++i) {
    out.push_back(static_cast<float>(bf16.data<BFloat16>()[i]));
  }
  return out;
}

TEST(MixedPrecisionTest, LayersReadTheValueOrTheCopyOfTheirInputsDType) {
  Parameter p = MakeF32("fc1.weight", {1.0f + 0x1p-9f, -3.0f});
  absl::StatusOr<Tensor> f32 = ValueFor(p, DType::kF32);
  ASSERT_TRUE(f32.ok()) << f32.status();
  EXPECT_EQ(f32->raw_data(), p.value.raw_data());  // The master itself, no copy.

  // No copy yet: the error names the parameter and the missing step.
  absl::Status missing = ValueFor(p, DType::kBF16).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.message().find("fc1.weight is f32 and has no bf16 copy"), std::string::npos)
      << missing;
  EXPECT_NE(missing.message().find("RoundComputeCopies"), std::string::npos) << missing;

  Parameter* parameters[] = {&p};
  ASSERT_TRUE(RoundComputeCopies(parameters, DType::kBF16).ok());
  absl::StatusOr<Tensor> bf16 = ValueFor(p, DType::kBF16);
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(bf16->dtype(), DType::kBF16);
  EXPECT_EQ(AsF32(*bf16), (std::vector<float>{1.0f, -3.0f}));  // Rounded to nearest even.
  EXPECT_EQ(p.value.dtype(), DType::kF32);  // The master keeps its bits.
  EXPECT_EQ(p.value.ToVector<float>()[0], 1.0f + 0x1p-9f);

  // Back to f32 passes: the copies go.
  ASSERT_TRUE(RoundComputeCopies(parameters, DType::kF32).ok());
  EXPECT_FALSE(p.compute_copy.defined());
}

TEST(MixedPrecisionTest, Bf16GradientsAddIntoTheF32Sum) {
  Parameter p = MakeF32("bias", {0.0f, 0.0f});
  int accumulated = 0;
  p.on_grad_accumulated = [&] { ++accumulated; };
  const Tensor f32_grad = *Tensor::FromVector<float>({1.0f, 0x1p-12f}, {2});
  Tensor bf16_grad = *Tensor::Empty({2}, DType::kBF16);
  bf16_grad.data<BFloat16>()[0] = BFloat16(0x1p-10f);
  bf16_grad.data<BFloat16>()[1] = BFloat16(-2.0f);
  ASSERT_TRUE(AccumulateGrad(p, f32_grad).ok());
  const absl::Status added = AccumulateGrad(p, bf16_grad);
  ASSERT_TRUE(added.ok()) << added;
  // The sum is f32: 1 + 2^-10 would round away in bf16 (8 bits of mantissa).
  EXPECT_EQ(p.grad.dtype(), DType::kF32);
  EXPECT_EQ(p.grad.ToVector<float>(), (std::vector<float>{1.0f + 0x1p-10f, 0x1p-12f - 2.0f}));
  EXPECT_EQ(accumulated, 2);
}

Tensor Bf16(const std::vector<float>& values) {
  Tensor t = *Tensor::Empty({static_cast<int64_t>(values.size())}, DType::kBF16);
  for (size_t i = 0; i < values.size(); ++i) t.data<BFloat16>()[i] = BFloat16(values[i]);
  return t;
}

// A trainer's undefined start (core/trainable_model.h): a batch's first bf16
// gradient is kept as it came, a second one sums in f32, and
// CompleteGradients widens what is still 16-bit with one cast, fills what no
// pass reached and leaves f32 sums as they are.
TEST(MixedPrecisionTest, FirstGradientsStayBf16UntilOneCastCompletesThem) {
  Parameter kept = MakeF32("kept", {0, 0}), summed = MakeF32("summed", {0, 0});
  Parameter other = MakeF32("other", {0, 0}), unreached = MakeF32("unreached", {0, 0, 0});
  Parameter f32 = MakeF32("f32", {0, 0});
  for (Parameter* p : {&kept, &summed, &other, &unreached, &f32}) p->grad = Tensor();
  const Tensor first = Bf16({1.0f, -0.5f});
  ASSERT_TRUE(AccumulateGrad(kept, first).ok());
  EXPECT_EQ(kept.grad.dtype(), DType::kBF16);
  EXPECT_EQ(kept.grad.raw_data(), first.raw_data());  // Taken, not copied.
  ASSERT_TRUE(AccumulateGrad(summed, Bf16({1.0f, 3.0f})).ok());
  ASSERT_TRUE(AccumulateGrad(summed, Bf16({0x1p-10f, 1.0f})).ok());
  EXPECT_EQ(summed.grad.dtype(), DType::kF32);  // Summed in f32: 1 + 2^-10 kept.
  EXPECT_EQ(summed.grad.ToVector<float>(), (std::vector<float>{1.0f + 0x1p-10f, 4.0f}));
  ASSERT_TRUE(AccumulateGrad(other, Bf16({2.0f, 0x1p-20f})).ok());
  const Tensor f32_grad = *Tensor::FromVector<float>({5.0f, 6.0f}, {2});
  ASSERT_TRUE(AccumulateGrad(f32, f32_grad).ok());

  SetOpProfiling(true);
  ResetOpProfile();
  Parameter* parameters[] = {&kept, &summed, &other, &unreached, &f32};
  ASSERT_TRUE(CompleteGradients(parameters).ok());
  EXPECT_EQ(OpProfileCalls("cast"), 1);  // kept and other, together.
  EXPECT_EQ(OpProfileCalls("fill"), 1);  // unreached.
  SetOpProfiling(false);
  for (Parameter* p : parameters) EXPECT_EQ(p->grad.dtype(), DType::kF32) << p->name;
  EXPECT_EQ(kept.grad.ToVector<float>(), (std::vector<float>{1.0f, -0.5f}));
  EXPECT_EQ(other.grad.ToVector<float>(), (std::vector<float>{2.0f, 0x1p-20f}));
  EXPECT_EQ(unreached.grad.ToVector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(summed.grad.ToVector<float>(), (std::vector<float>{1.0f + 0x1p-10f, 4.0f}));
  EXPECT_EQ(f32.grad.raw_data(), f32_grad.raw_data());
}

// A watched parameter (the data-parallel reducer's hook) sees f32 at every
// addition, the first included.
TEST(MixedPrecisionTest, AWatchedFirstGradientIsWidenedAtOnce) {
  Parameter p = MakeF32("watched", {0, 0});
  p.grad = Tensor();
  int accumulated = 0;
  p.on_grad_accumulated = [&] {
    ++accumulated;
    EXPECT_EQ(p.grad.dtype(), DType::kF32);
  };
  ASSERT_TRUE(AccumulateGrad(p, Bf16({3.0f, -1.0f})).ok());
  EXPECT_EQ(accumulated, 1);
  EXPECT_EQ(p.grad.ToVector<float>(), (std::vector<float>{3.0f, -1.0f}));
}

// The CPU trains in f32 or bf16 (f32 tensors, bf16 products): a model
// asked for f16 there says so before any pass, naming what it supports
// (config validation says the same for train.dtype).
TEST(MixedPrecisionTest, TheCpuRefusesF16NamingWhatItSupports) {
  config::ModelConfig model;
  model.set_num_encoder_layers(1);
  model.set_num_decoder_layers(1);
  model.set_d_model(8);
  model.set_d_ff(16);
  model.set_num_heads(2);
  model.set_d_k(4);
  model.set_d_v(4);
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, VocabularySpec{10, 0, 1, 2}, Device::Cpu(), 1);
  ASSERT_TRUE(transformer.ok()) << transformer.status();
  EXPECT_TRUE((*transformer)->SetComputeDType(DType::kF32).ok());
  EXPECT_TRUE((*transformer)->SetComputeDType(DType::kBF16).ok());
  const absl::Status f16 = (*transformer)->SetComputeDType(DType::kF16);
  EXPECT_EQ(f16.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(f16.message().find("f16 is not supported for training on cpu: the CPU trains in "
                               "f32, or bf16"),
            std::string::npos)
      << f16;
}

}  // namespace
}  // namespace tfm
