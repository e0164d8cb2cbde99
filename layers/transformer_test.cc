// The assembled model: the contract the trainer relies on (gradient accumulation, explicit dropout randomness,
// padding that changes nothing, evaluation without dropout). Equality with
// PyTorch is tests/transformer_parity_test.cc.
#include "layers/transformer.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layers/decoder_input_hook_testing.h"
#include "layers/parameter_count_testing.h"

namespace tfm {
namespace {

using ::testing::ElementsAre;

config::ModelConfig TinyModel() {
  config::ModelConfig model;
  model.set_num_encoder_layers(2);
  model.set_num_decoder_layers(2);
  model.set_d_model(16);
  model.set_d_ff(24);
  model.set_num_heads(2);
  model.set_d_k(8);
  model.set_d_v(8);
  model.set_dropout(0.3f);
  model.set_attention_dropout(0.1f);
  return model;
}

constexpr int kPad = 0, kBos = 2, kVocab = 13;

// Rows padded to the longest with kPad (plus `extra_padding` columns).
Batch MakeBatch(const std::vector<Example>& examples, int extra_padding = 0) {
  Batch batch;
  batch.size = examples.size();
  for (const Example& e : examples) {
    batch.source_length = std::max<int>(batch.source_length, e.source.size());
    batch.target_length = std::max<int>(batch.target_length, e.target.size());
  }
  batch.source_length += extra_padding;
  for (const Example& e : examples) {
    std::vector<int> source = e.source, target = e.target;
    batch.source_lengths.push_back(source.size());
    batch.target_lengths.push_back(target.size());
    source.resize(batch.source_length, kPad);
    target.resize(batch.target_length, kPad);
    batch.source.insert(batch.source.end(), source.begin(), source.end());
    batch.target.insert(batch.target.end(), target.begin(), target.end());
  }
  return batch;
}

const std::vector<Example> kExamples = {
    {{5, 6, 7, 8, 3}, {9, 10, 3}}, {{4, 3}, {11, 12, 5, 6, 3}}, {{7, 7, 9, 3}, {8, 3}}};

std::unique_ptr<Transformer> TinyTransformer(const config::ModelConfig& model = TinyModel()) {
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, VocabularySpec{kVocab, kPad, kBos}, Device::Cpu(), 42);
  EXPECT_TRUE(transformer.ok()) << transformer.status();
  return transformer.ok() ? *std::move(transformer) : nullptr;
}

std::vector<float> Grads(Transformer& transformer) {
  std::vector<float> all;
  for (const Parameter* p : transformer.Parameters()) {
    for (float g : p->grad.span<float>()) all.push_back(g);
  }
  return all;
}

TEST(TransformerTest, SharedTableIsOneParameterAndNamesFollowFairseq) {
  std::unique_ptr<Transformer> transformer = TinyTransformer();
  ASSERT_NE(transformer, nullptr);
  std::vector<std::string> names;
  for (const Parameter* p : transformer->Parameters()) names.push_back(p->name);
  EXPECT_EQ(names.front(), "encoder.embed_tokens.weight");
  EXPECT_THAT(names, ::testing::Contains("decoder.layers.1.encoder_attn.k_proj.weight"));
  EXPECT_THAT(names, ::testing::Not(::testing::Contains("decoder.embed_tokens.weight")));
  EXPECT_EQ(transformer->NumParameters(), ExpectedParameterCount(TinyModel(), kVocab));

  config::ModelConfig unshared = TinyModel();
  unshared.set_share_embeddings(false);
  std::unique_ptr<Transformer> separate = TinyTransformer(unshared);
  ASSERT_NE(separate, nullptr);
  EXPECT_EQ(separate->Parameters()[1]->name, "decoder.embed_tokens.weight");
  EXPECT_EQ(separate->NumParameters(), transformer->NumParameters() + kVocab * 16);
}

TEST(TransformerTest, GradientsAccumulateUntilZeroed) {
  std::unique_ptr<Transformer> transformer = TinyTransformer();
  ASSERT_NE(transformer, nullptr);
  const Batch batch = MakeBatch(kExamples);
  const StepContext step{.training = true, .seed = 9, .counter = 4};
  absl::StatusOr<LossStats> first = transformer->ForwardBackward(batch, step);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->target_tokens, 3 + 5 + 2);
  EXPECT_GT(first->loss, first->nll * (1 - 0.1) - 1e-3);
  EXPECT_TRUE(std::isfinite(first->loss));
  const std::vector<float> once = Grads(*transformer);
  ASSERT_TRUE(transformer->ForwardBackward(batch, step).ok());
  const std::vector<float> twice = Grads(*transformer);
  for (size_t i = 0; i < once.size(); ++i) ASSERT_FLOAT_EQ(twice[i], 2 * once[i]) << i;
  ASSERT_TRUE(transformer->ZeroGrads().ok());
  for (float g : Grads(*transformer)) ASSERT_EQ(g, 0.0f);
}

// Dropout masks are a function of (seed, counter) alone: the same pair
// repeats a step exactly (a resumed run), another counter draws new masks.
TEST(TransformerTest, DropoutDependsOnlyOnSeedAndCounter) {
  std::unique_ptr<Transformer> transformer = TinyTransformer();
  ASSERT_NE(transformer, nullptr);
  const Batch batch = MakeBatch(kExamples);
  const auto loss = [&](StepContext step) {
    return transformer->ForwardBackward(batch, step)->loss;
  };
  const double a = loss({.training = true, .seed = 1, .counter = 7});
  EXPECT_EQ(loss({.training = true, .seed = 1, .counter = 7}), a);
  EXPECT_NE(loss({.training = true, .seed = 1, .counter = 8}), a);
  EXPECT_NE(loss({.training = true, .seed = 2, .counter = 7}), a);
  // Without training there is no dropout: seeds do not matter, and Evaluate
  // gives the same loss.
  const double eval = loss({.training = false, .seed = 1});
  EXPECT_EQ(loss({.training = false, .seed = 5, .counter = 3}), eval);
  EXPECT_EQ(transformer->Evaluate(batch)->loss, eval);
  EXPECT_NE(eval, a);
}

// model.decoder_input_hook adds encoder rows to the decoder inputs: the
// gradient of every encoder parameter must carry that path too. Central
// differences of the loss (no dropout) against ForwardBackward's gradient
// for the encoder's last LayerNorm and a few embedding entries.
TEST(TransformerTest, DecoderInputHookGradientsMatchCentralDifferences) {
  config::ModelConfig model = TinyModel();
  model.set_dropout(0);
  model.set_attention_dropout(0);
  model.set_decoder_input_hook(kCountingHookForTesting);
  VocabularySpec vocabulary{kVocab, kPad, kBos};
  vocabulary.decoder_input_hook = std::make_shared<CountingHookForTesting>();
  absl::StatusOr<std::unique_ptr<Transformer>> transformer =
      Transformer::Create(model, vocabulary, Device::Cpu(), 42);
  ASSERT_TRUE(transformer.ok()) << transformer.status();
  const Batch batch = MakeBatch(kExamples, /*extra_padding=*/1);
  ASSERT_TRUE((*transformer)->ForwardBackward(batch, {.training = false, .seed = 1}).ok());
  int checked = 0;
  for (Parameter* p : (*transformer)->Parameters()) {
    const bool norm = p->name == "encoder.layers.1.final_layer_norm.bias" ||
                      p->name == "encoder.layers.1.final_layer_norm.weight";
    if (!norm && p->name != "encoder.embed_tokens.weight") continue;
    float* values = p->value.data<float>();
    const std::vector<float> grad = p->grad.ToVector<float>();
    const int64_t count = norm ? p->value.num_elements() : 40;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = norm ? i : 16 * 5 + i;  // Rows 5 and 6 of the table.
      const float saved = values[at];
      const double h = 1e-3;
      values[at] = saved + h;
      const double up = (*transformer)->Evaluate(batch)->loss;
      values[at] = saved - h;
      const double down = (*transformer)->Evaluate(batch)->loss;
      values[at] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grad[at], numeric, 2e-3 + 0.02 * std::abs(numeric)) << p->name << "[" << at << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16 + 16 + 40);
}

// More padding columns change neither the loss nor a gradient.
TEST(TransformerTest, PaddingChangesNothing) {
  std::unique_ptr<Transformer> transformer = TinyTransformer();
  ASSERT_NE(transformer, nullptr);
  const StepContext step{.training = false, .loss_scale = 0.5f};
  const LossStats tight = *transformer->ForwardBackward(MakeBatch(kExamples), step);
  const std::vector<float> tight_grads = Grads(*transformer);
  ASSERT_TRUE(transformer->ZeroGrads().ok());
  const LossStats padded = *transformer->ForwardBackward(MakeBatch(kExamples, 3), step);
  const std::vector<float> padded_grads = Grads(*transformer);
  EXPECT_NEAR(padded.loss, tight.loss, 1e-5 * tight.loss);
  EXPECT_EQ(padded.target_tokens, tight.target_tokens);
  for (size_t i = 0; i < tight_grads.size(); ++i) {
    ASSERT_NEAR(padded_grads[i], tight_grads[i], 1e-5) << i;
  }
}

TEST(TransformerTest, RejectsBadVocabulariesAndBatches) {
  EXPECT_EQ(
      Transformer::Create(TinyModel(), VocabularySpec{5, 0, 7}, Device::Cpu(), 1).status().code(),
      absl::StatusCode::kInvalidArgument);
  std::unique_ptr<Transformer> transformer = TinyTransformer();
  ASSERT_NE(transformer, nullptr);
  Batch batch = MakeBatch(kExamples);
  batch.source.pop_back();
  EXPECT_EQ(transformer->Evaluate(batch).status().code(), absl::StatusCode::kInvalidArgument);

  // Ids outside the vocabulary are found on the host, before any gather
  // (so that a GPU's gathers need not check and wait), naming where.
  Batch outside = MakeBatch(kExamples);
  outside.target[outside.target_length + 1] = kVocab;  // Row 1, position 1.
  const absl::Status status = transformer->ForwardBackward(outside, StepContext{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("batch: target token id 13 (row 1, position 1) is outside the "
                                  "model's vocabulary of 13 ids"),
            std::string::npos)
      << status;
  outside = MakeBatch(kExamples);
  outside.source[2] = -1;
  EXPECT_NE(transformer->Evaluate(outside).status().message().find(
                "batch: source token id -1 (row 0, position 2)"),
            std::string::npos);
}

}  // namespace
}  // namespace tfm
