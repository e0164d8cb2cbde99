// Every built-in layer: gradients of inputs and parameters (dropout on,
// masks fixed by the generator state), parameter names, mask semantics and
// replacement of a sublayer by a registered name.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/layer_registry.h"
#include "core/op_profile.h"
#include "core/rng.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "layers/layer_gradient_check.h"
#include "layers/packed_projections.h"
#include "ops/random/random.h"

namespace tfm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tfm::testing::CheckLayerGradients;
using ::tfm::testing::GradientCheckOptions;

// ReLU's kink: a step of 1e-2 in fc1's weights moves some hidden units across
// zero (the numeric gradient then mixes both sides), so layers with a
// feed-forward network take smaller steps; the loss here sums few outputs, so
// f32 rounding stays well below the tolerance.
GradientCheckOptions AcrossRelu() { return GradientCheckOptions{.step = 1e-3}; }

// Small and lopsided on purpose: d_k != d_v != d_model / heads.
config::ModelConfig SmallModel() {
  config::ModelConfig model;
  model.set_d_model(8);
  model.set_d_ff(12);
  model.set_num_heads(2);
  model.set_d_k(3);
  model.set_d_v(5);
  model.set_dropout(0.2f);
  model.set_attention_dropout(0.2f);
  model.set_relu_dropout(0.2f);
  model.set_max_positions(16);
  return model;
}

class LayersTest : public ::testing::Test {
 protected:
  std::unique_ptr<Layer> Create(const std::string& name, const config::ModelConfig& model,
                                Attrs attrs = {}, const std::string& scope = "") {
    absl::StatusOr<std::unique_ptr<Layer>> layer =
        CreateLayer(name, LayerArgs{model, std::move(attrs), Device::Cpu(), scope, &init_rng_});
    EXPECT_TRUE(layer.ok()) << layer.status();
    return layer.ok() ? *std::move(layer) : nullptr;
  }

  Tensor Random(const Shape& shape) {
    return *RandomUniform(shape, PhiloxState{5, ++stream_, 0}, -1.0f, 1.0f);
  }

  static Tensor Lengths(std::vector<int32_t> lengths) {
    const int64_t n = lengths.size();
    return *Tensor::FromVector<int32_t>(lengths, {n});
  }

  static std::vector<std::string> Names(Layer& layer) {
    std::vector<std::string> names;
    for (const Parameter* p : layer.Parameters()) names.push_back(p->name);
    return names;
  }

  Generator init_rng_{7};
  uint64_t stream_ = 0;
};

TEST_F(LayersTest, SelfAttentionGradientsWithPaddingCausalAndDropout) {
  for (const bool causal : {false, true}) {
    std::unique_ptr<Layer> attention = Create("multi_head_attention", SmallModel(),
                                              {{"self_attention", true}, {"causal", causal}});
    ASSERT_NE(attention, nullptr);
    EXPECT_TRUE(CheckLayerGradients(*attention, {Random({2, 5, 8}), Lengths({5, 3})},
                                    /*training=*/true))
        << "causal " << causal;
  }
}

TEST_F(LayersTest, EncoderDecoderAttentionGradients) {
  std::unique_ptr<Layer> attention = Create("multi_head_attention", SmallModel());
  ASSERT_NE(attention, nullptr);
  EXPECT_TRUE(CheckLayerGradients(
      *attention, {Random({2, 4, 8}), Random({2, 6, 8}), Lengths({6, 2})}, /*training=*/true));
}

// Keys and values of one size: attention packs its projections
// (layers/packed_projections.h): one product for q, k and v of x (self-
// attention), or for k and v of the memory. Its gradients against finite
// differences, and its outputs and gradients against the three products
// (ScopedPackedProjections(false)): equal up to the sums' rounding.
TEST_F(LayersTest, PackedProjectionsHaveTheGradientsOfSeparateOnes) {
  config::ModelConfig model = SmallModel();
  model.set_d_k(4);
  model.set_d_v(4);
  for (const bool self : {true, false}) {
    SCOPED_TRACE(self ? "self-attention" : "encoder-decoder attention");
    const std::vector<Tensor> inputs =
        self ? std::vector<Tensor>{Random({2, 5, 8}), Lengths({5, 3})}
             : std::vector<Tensor>{Random({2, 4, 8}), Random({2, 6, 8}), Lengths({6, 2})};
    const Attrs attrs = self ? Attrs{{"self_attention", true}, {"causal", true}} : Attrs{};
    std::unique_ptr<Layer> attention = Create("multi_head_attention", model, attrs);
    ASSERT_NE(attention, nullptr);
    EXPECT_TRUE(CheckLayerGradients(*attention, inputs, /*training=*/true));

    // One pass each way from the same generator state and output gradient.
    const Tensor dy = Random({2, inputs[0].dim(1), 8});
    const auto pass = [&](bool packed) {
      const ScopedPackedProjections packing(packed);
      Generator rng(11);
      ForwardContext context{/*training=*/true, &rng};
      for (Parameter* p : attention->Parameters()) p->grad = Tensor();
      SetOpProfiling(true);
      ResetOpProfile();
      std::vector<Tensor> results = *attention->Forward(context, inputs);
      const int64_t products = OpProfileCalls("linear");
      SetOpProfiling(false);
      absl::StatusOr<std::vector<Tensor>> grads = attention->Backward({dy});
      EXPECT_TRUE(grads.ok()) << grads.status();
      for (const Tensor& grad : *grads) {
        if (grad.defined()) results.push_back(grad);
      }
      for (Parameter* p : attention->Parameters()) results.push_back(p->grad);
      return std::pair{results, products};
    };
    const auto [packed, packed_products] = pass(true);
    const auto [separate, separate_products] = pass(false);
    EXPECT_EQ(packed_products, self ? 2 : 3);  // + out_proj; + q_proj.
    EXPECT_EQ(separate_products, 4);
    ASSERT_EQ(packed.size(), separate.size());
    for (size_t i = 0; i < packed.size(); ++i) {
      ASSERT_TRUE(packed[i].defined() && separate[i].defined()) << i;
      ASSERT_EQ(packed[i].shape(), separate[i].shape()) << i;
      const std::vector<float> a = packed[i].ToVector<float>(), b = separate[i].ToVector<float>();
      for (size_t j = 0; j < a.size(); ++j) {
        EXPECT_NEAR(a[j], b[j], 1e-5f * (1.0f + std::abs(b[j]))) << "result " << i << " at " << j;
      }
    }
  }
}

TEST_F(LayersTest, AttentionParametersAreNamedLikeFairseq) {
  std::unique_ptr<Layer> attention =
      Create("multi_head_attention", SmallModel(), {}, "decoder.layers.0.encoder_attn.");
  ASSERT_NE(attention, nullptr);
  EXPECT_THAT(Names(*attention), ElementsAre("decoder.layers.0.encoder_attn.q_proj.weight",
                                             "decoder.layers.0.encoder_attn.q_proj.bias",
                                             "decoder.layers.0.encoder_attn.k_proj.weight",
                                             "decoder.layers.0.encoder_attn.k_proj.bias",
                                             "decoder.layers.0.encoder_attn.v_proj.weight",
                                             "decoder.layers.0.encoder_attn.v_proj.bias",
                                             "decoder.layers.0.encoder_attn.out_proj.weight",
                                             "decoder.layers.0.encoder_attn.out_proj.bias"));
  EXPECT_EQ(attention->Parameters()[4]->value.shape(), (Shape{2 * 5, 8}));  // v: h d_v.
  EXPECT_EQ(attention->Parameters()[6]->value.shape(), (Shape{8, 2 * 5}));  // out.
}

// A padded key changes no real query's output; a causal query ignores
// later positions.
TEST_F(LayersTest, MasksHideWhatTheyShould) {
  std::unique_ptr<Layer> attention =
      Create("multi_head_attention", SmallModel(), {{"self_attention", true}, {"causal", true}});
  ASSERT_NE(attention, nullptr);
  ForwardContext eval;
  Tensor x = Random({1, 4, 8});  // Edited in place below.
  const std::vector<float> before =
      (*attention->Forward(eval, {x, Lengths({3})}))[0].ToVector<float>();
  x.data<float>()[3 * 8] += 5.0f;  // Change the padded position 3.
  const std::vector<float> after =
      (*attention->Forward(eval, {x, Lengths({3})}))[0].ToVector<float>();
  for (int i = 0; i < 3 * 8; ++i) EXPECT_FLOAT_EQ(before[i], after[i]) << i;
  EXPECT_NE(before[3 * 8], after[3 * 8]);  // Position 3 itself did change.
  x.data<float>()[2 * 8] += 5.0f;          // Position 2: 0 and 1 must not see it (causal).
  const std::vector<float> later =
      (*attention->Forward(eval, {x, Lengths({4})}))[0].ToVector<float>();
  const std::vector<float> unpadded =
      (*attention->Forward(eval, {x, Tensor()}))[0].ToVector<float>();
  for (int i = 0; i < 2 * 8; ++i) EXPECT_FLOAT_EQ(later[i], before[i]) << i;
  EXPECT_EQ(later, unpadded);  // Full lengths mean no mask at all.
}

TEST_F(LayersTest, FeedForwardGradientsAndNames) {
  std::unique_ptr<Layer> ffn = Create("feed_forward", SmallModel(), {}, "encoder.layers.1.");
  ASSERT_NE(ffn, nullptr);
  EXPECT_THAT(Names(*ffn), ElementsAre("encoder.layers.1.fc1.weight", "encoder.layers.1.fc1.bias",
                                       "encoder.layers.1.fc2.weight", "encoder.layers.1.fc2.bias"));
  EXPECT_TRUE(CheckLayerGradients(*ffn, {Random({3, 2, 8})}, /*training=*/true, AcrossRelu()));
}

TEST_F(LayersTest, ResidualPostAndPreNormGradients) {
  for (const auto position : {config::ModelConfig::POST, config::ModelConfig::PRE}) {
    config::ModelConfig model = SmallModel();
    model.set_norm_position(position);
    std::unique_ptr<Layer> block = Create("residual", model,
                                          {{"sublayer", std::string("multi_head_attention")},
                                           {"sublayer_scope", std::string("encoder_attn")},
                                           {"norm_scope", std::string("encoder_attn_layer_norm")}});
    ASSERT_NE(block, nullptr);
    EXPECT_THAT(Names(*block), ::testing::Contains("encoder_attn_layer_norm.weight"));
    EXPECT_THAT(Names(*block), ::testing::Contains("encoder_attn.q_proj.weight"));
    EXPECT_TRUE(CheckLayerGradients(*block, {Random({2, 3, 8}), Random({2, 4, 8}), Lengths({4, 1})},
                                    /*training=*/true))
        << config::ModelConfig::NormPosition_Name(position);
  }
}

TEST_F(LayersTest, EmbeddingGradientsSinusoidalAndLearned) {
  const Tensor ids = *Tensor::FromVector<int32_t>({1, 4, 4, 0, 2, 3}, {2, 3});
  for (const auto encoding : {config::ModelConfig::SINUSOIDAL, config::ModelConfig::LEARNED}) {
    config::ModelConfig model = SmallModel();
    model.set_positional_encoding(encoding);
    std::unique_ptr<Layer> embedding = Create("embedding", model, {}, "decoder.");
    ASSERT_NE(embedding, nullptr);
    EXPECT_EQ(Names(*embedding).size(), encoding == config::ModelConfig::LEARNED ? 1u : 0u);
    EXPECT_TRUE(CheckLayerGradients(*embedding, {Random({5, 8}), ids}, /*training=*/true))
        << config::ModelConfig::PositionalEncoding_Name(encoding);
  }
}

TEST_F(LayersTest, EmbeddingIsScaledTableRowPlusSinusoid) {
  config::ModelConfig model = SmallModel();
  std::unique_ptr<Layer> embedding = Create("embedding", model);
  ASSERT_NE(embedding, nullptr);
  const Tensor table = Random({3, 8});
  ForwardContext eval;
  const Tensor x =
      (*embedding->Forward(eval, {table, *Tensor::FromVector<int32_t>({2, 1}, {1, 2})}))[0];
  // Position 1, dimensions 0 and 1: sin(1) and cos(1).
  EXPECT_NEAR(x.data<float>()[8], std::sqrt(8.0f) * table.data<float>()[8] + std::sin(1.0f), 1e-5);
  EXPECT_NEAR(x.data<float>()[9], std::sqrt(8.0f) * table.data<float>()[9] + std::cos(1.0f), 1e-5);
}

TEST_F(LayersTest, LearnedPositionsRejectLongerSequences) {
  config::ModelConfig model = SmallModel();
  model.set_positional_encoding(config::ModelConfig::LEARNED);
  model.set_max_positions(2);
  std::unique_ptr<Layer> embedding = Create("embedding", model);
  ASSERT_NE(embedding, nullptr);
  ForwardContext eval;
  absl::Status status =
      embedding->Forward(eval, {Random({3, 8}), *Tensor::FromVector<int32_t>({0, 1, 2}, {1, 3})})
          .status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_positions = 2"));
}

TEST_F(LayersTest, EncoderAndDecoderLayerGradients) {
  std::unique_ptr<Layer> encoder = Create("encoder_layer", SmallModel());
  ASSERT_NE(encoder, nullptr);
  EXPECT_TRUE(CheckLayerGradients(*encoder, {Random({2, 4, 8}), Lengths({4, 2})},
                                  /*training=*/true, AcrossRelu()));
  std::unique_ptr<Layer> decoder = Create("decoder_layer", SmallModel());
  ASSERT_NE(decoder, nullptr);
  EXPECT_THAT(Names(*decoder), ::testing::IsSupersetOf(
                                   {"self_attn.q_proj.weight", "self_attn_layer_norm.bias",
                                    "encoder_attn.out_proj.bias", "encoder_attn_layer_norm.weight",
                                    "fc2.weight", "final_layer_norm.bias"}));
  EXPECT_TRUE(CheckLayerGradients(*decoder, {Random({2, 3, 8}), Random({2, 4, 8}), Lengths({4, 2})},
                                  /*training=*/true, AcrossRelu()));
}

// Post-norm: each sublayer's products of its input add into the residual
// path's gradient in their GEMMs (q, k and v of self-attention, fc1), so an
// encoder layer's backward runs no add op; pre-norm adds the two paths'
// gradients with one add per sublayer. (The gradients themselves are
// checked above.)
TEST_F(LayersTest, PostNormResidualsSumGradientsInTheirProducts) {
  for (const auto position : {config::ModelConfig::POST, config::ModelConfig::PRE}) {
    config::ModelConfig model = SmallModel();
    model.set_norm_position(position);
    std::unique_ptr<Layer> encoder = Create("encoder_layer", model);
    ASSERT_NE(encoder, nullptr);
    Generator rng(3);
    ForwardContext context{/*training=*/true, &rng};
    absl::StatusOr<std::vector<Tensor>> y =
        encoder->Forward(context, {Random({2, 4, 8}), Lengths({4, 2})});
    ASSERT_TRUE(y.ok()) << y.status();
    // As a trainer starts a batch: parameter gradients taken, not added.
    for (Parameter* p : encoder->Parameters()) p->grad = Tensor();
    SetOpProfiling(true);
    ResetOpProfile();
    absl::StatusOr<std::vector<Tensor>> grads = encoder->Backward({Random({2, 4, 8})});
    const int64_t adds = OpProfileCalls("add"), adding = OpProfileCalls("linear_backward_adding");
    SetOpProfiling(false);
    ASSERT_TRUE(grads.ok()) << grads.status();
    SCOPED_TRACE(config::ModelConfig::NormPosition_Name(position));
    if (position == config::ModelConfig::POST) {
      EXPECT_EQ(adds, 0);
      EXPECT_EQ(adding, 4);  // Self-attention's q, k and v; fc1.
    } else {
      EXPECT_EQ(adds, 2);    // One per sublayer.
      EXPECT_EQ(adding, 2);  // Self-attention's k and v into q's.
    }
  }
}

TEST_F(LayersTest, PreNormDecoderStackGradientsAndFinalNorm) {
  config::ModelConfig model = SmallModel();
  model.set_norm_position(config::ModelConfig::PRE);
  std::unique_ptr<Layer> stack =
      Create("stack", model, {{"layer", std::string("decoder_layer")}, {"num_layers", int64_t{2}}},
             "decoder.");
  ASSERT_NE(stack, nullptr);
  const std::vector<std::string> names = Names(*stack);
  EXPECT_EQ(names.front(), "decoder.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(names.back(), "decoder.layer_norm.bias");
  EXPECT_TRUE(CheckLayerGradients(*stack, {Random({2, 3, 8}), Random({2, 4, 8}), Lengths({3, 4})},
                                  /*training=*/true, AcrossRelu()));
}

// A layer registered under another name (as a plugin would) replaces the
// built-in feed-forward in every block once the config names it.
class ZeroSublayer : public Layer {
 public:
  absl::StatusOr<std::vector<Tensor>> Forward(ForwardContext&,
                                              absl::Span<const Tensor> inputs) override {
    shape_ = inputs[0].shape();
    return std::vector<Tensor>{*Tensor::Zeros(shape_, DType::kF32)};
  }
  absl::StatusOr<std::vector<Tensor>> Backward(absl::Span<const Tensor>) override {
    return std::vector<Tensor>{*Tensor::Zeros(shape_, DType::kF32)};
  }

 private:
  Shape shape_;
};

TFM_REGISTER_LAYER(LayerDef{
    .name = "test_zero_sublayer",
    .doc = "outputs zeros (tests replacement by name)",
    .create = [](const LayerArgs&) -> absl::StatusOr<std::unique_ptr<Layer>> {
      return std::make_unique<ZeroSublayer>();
    },
});

TEST_F(LayersTest, ConfigNamesReplaceBuiltinSublayers) {
  config::ModelConfig model = SmallModel();
  model.set_feed_forward_layer("test_zero_sublayer");
  model.set_attention_layer("test_zero_sublayer");
  std::unique_ptr<Layer> encoder = Create("encoder_layer", model);
  ASSERT_NE(encoder, nullptr);
  // Only the two norms are left: the sublayers have no parameters.
  EXPECT_THAT(Names(*encoder),
              ElementsAre("self_attn_layer_norm.weight", "self_attn_layer_norm.bias",
                          "final_layer_norm.weight", "final_layer_norm.bias"));
  model.set_feed_forward_layer("no_such_layer");
  absl::Status status =
      CreateLayer("encoder_layer", LayerArgs{model, {}, Device::Cpu(), "", &init_rng_}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("feed_forward"));  // Known names listed.
}

TEST_F(LayersTest, TrainingWithDropoutNeedsAGenerator) {
  std::unique_ptr<Layer> ffn = Create("feed_forward", SmallModel());
  ASSERT_NE(ffn, nullptr);
  ForwardContext no_rng{/*training=*/true, /*rng=*/nullptr};
  EXPECT_EQ(ffn->Forward(no_rng, {Random({1, 2, 8})}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tfm
