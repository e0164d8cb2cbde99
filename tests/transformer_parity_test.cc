// The whole model against PyTorch: torch.nn.Transformer (batch_first, the
// same post- or pre-norm, dropout 0) loaded with our parameter values, with
// the shared embedding table, sqrt(d_model) scaling, positions and the tied
// output projection written out below, and the loss
// CrossEntropyLoss(label_smoothing, ignore_index=pad, reduction=sum) times
// loss_scale. Loss and every parameter's gradient must agree within 1e-4
// relative, on a batch with padding in both source and target. PyTorch runs
// in float64, so the bar measures our float32 error alone.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/file_io.h"
#include "gtest/gtest.h"
#include "runtime/train/checkpoint.h"
#include "layers/transformer.h"
#include "tests/util/peer_python.h"
#include "tests/util/tiny_model.h"
#include "tests/util/torch_parity.h"

namespace tfm {
namespace {

using ::tfm::testing::AllClose;
using ::tfm::testing::NamedTensors;
using ::tfm::testing::SumTolerance;
using ::tfm::testing::Tolerance;
using ::tfm::testing::TorchReference;

constexpr int kVocab = 23, kPad = 0, kBos = 2;

double MaxAbs(const Tensor& t) {
  double largest = 0;
  for (float v : t.span<float>()) largest = std::max(largest, std::abs(static_cast<double>(v)));
  return largest;
}

// Our parameters by name (p<i> in Python, names[i] their state_dict key)
// become nn.Transformer's by tools/python/ours_to_torch.py (run before this
// body: see ReferenceHeader).
constexpr char kReference[] = R"py(
import math
if checkpoint:  # Our checkpoint file, read by the safetensors package.
    from safetensors.torch import load_file
    P = {n: t.double() for n, t in load_file(checkpoint).items()}
    assert sorted(P) == sorted(names), (sorted(P), sorted(names))
else:
    P = {n: globals()[f'p{i}'].detach().double().clone() for i, n in enumerate(names)}
d = P['encoder.embed_tokens.weight'].shape[1]
model = torch.nn.Transformer(d_model=d, nhead=heads, num_encoder_layers=layers,
                             num_decoder_layers=layers, dim_feedforward=d_ff, dropout=0.0,
                             layer_norm_eps=1e-6, batch_first=True, norm_first=pre).double()
if not pre:  # The paper has no final norms; nn.Transformer always adds them.
    model.encoder.norm = None
    model.decoder.norm = None

mapping = ours_to_torch(layers, pre)  # tools/python/ours_to_torch.py
model.load_state_dict({t: torch.cat([P[n] for n in ours]) for t, ours in mapping.items()},
                      strict=True)
E = P['encoder.embed_tokens.weight'].requires_grad_(True)
extra = {n: P[n].requires_grad_(True) for n in names if 'embed_positions' in n}

def positions(side, length):
    if extra:
        return extra[f'{side}.embed_positions.weight'][:length]
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, i / d)
    pe = torch.zeros(length, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe

S, T = source.shape[1], decoder_input.shape[1]
x = F.embedding(source.long(), E) * math.sqrt(d) + positions('encoder', S)
y = F.embedding(decoder_input.long(), E) * math.sqrt(d) + positions('decoder', T)
source_padding = torch.arange(S)[None, :] >= source_lengths.long()[:, None]
causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
h = model(x, y, src_key_padding_mask=source_padding, memory_key_padding_mask=source_padding,
          tgt_mask=causal)
logits = h @ E.t()
loss = F.cross_entropy(logits.reshape(-1, E.shape[0]), labels.reshape(-1).long(),
                       ignore_index=pad, label_smoothing=smoothing, reduction='sum')
(loss * loss_scale).backward()

grad = {'encoder.embed_tokens.weight': E.grad}
grad.update({n: t.grad for n, t in extra.items()})
named = dict(model.named_parameters())
for t, ours in mapping.items():
    for n, g in zip(ours, torch.chunk(named[t].grad, len(ours))):
        grad[n] = g
for i, n in enumerate(names):
    globals()[f'g{i}'] = grad[n]
)py";

struct ParityCase {
  config::ModelConfig::NormPosition norm;
  config::ModelConfig::PositionalEncoding positions;
};

absl::StatusOr<std::unique_ptr<Transformer>> MakeModel(const ParityCase& parity) {
  config::ModelConfig model;
  testing::SetTinyModelShape(model);
  model.set_dropout(0.0f);
  model.set_label_smoothing(0.1f);
  model.set_norm_position(parity.norm);
  model.set_positional_encoding(parity.positions);
  model.set_max_positions(12);
  return Transformer::Create(model, VocabularySpec{kVocab, kPad, kBos}, Device::Cpu(), 2017);
}

// Three pairs, padded in both source (7) and target (6); targets end in
// eos (3); 12 real target tokens.
Batch MakeBatch() {
  Batch batch;
  batch.size = 3;
  batch.source_length = 7;
  batch.target_length = 6;
  batch.source = {5, 6, 7, 8, 9, 10, 3, 11, 12, 3, 0, 0, 0, 0, 13, 14, 15, 16, 3, 0, 0};
  batch.target = {17, 18, 19, 3, 0, 0, 20, 21, 22, 4, 5, 3, 6, 3, 0, 0, 0, 0};
  batch.source_lengths = {7, 3, 5};
  batch.target_lengths = {4, 6, 2};
  return batch;
}

// The batch as the reference reads it, and the header defining its
// settings: `names` (our parameter names, p<i> in that order), `checkpoint`
// (a model.safetensors path, or None: the weights come as p<i>).
NamedTensors ReferenceInputs(const Batch& batch) {
  const auto ids = [](const std::vector<int>& v, const Shape& shape) {
    return *Tensor::FromVector<int32_t>(std::vector<int32_t>(v.begin(), v.end()), shape);
  };
  const int64_t t = batch.target_length;
  std::vector<int32_t> decoder_input(batch.target.size());
  for (int r = 0; r < batch.size; ++r) {
    decoder_input[r * t] = kBos;
    for (int j = 1; j < t; ++j) decoder_input[r * t + j] = batch.target[r * t + j - 1];
  }
  NamedTensors inputs;
  inputs["source"] = ids(batch.source, {batch.size, batch.source_length});
  inputs["labels"] = ids(batch.target, {batch.size, t});
  inputs["decoder_input"] = *Tensor::FromVector<int32_t>(decoder_input, {batch.size, t});
  inputs["source_lengths"] = ids(batch.source_lengths, {batch.size});
  return inputs;
}

std::string ReferenceHeader(const std::vector<Parameter*>& parameters, const ParityCase& parity,
                            const std::string& loss_scale, const std::string& checkpoint) {
  std::vector<std::string> names;
  for (const Parameter* parameter : parameters) {
    names.push_back(absl::StrCat("'", parameter->name, "'"));
  }
  const absl::StatusOr<std::string> mapping =
      ReadFileToString(testing::RunfilePath("tools/python/ours_to_torch.py"));
  EXPECT_TRUE(mapping.ok()) << mapping.status();
  return absl::StrCat(mapping.ok() ? *mapping : "", "\nnames = [", absl::StrJoin(names, ", "),
                      "]\nheads = 4\nlayers = 2\nd_ff = 64\n",
                      "pre = ", parity.norm == config::ModelConfig::PRE ? "True" : "False",
                      "\npad = ", kPad, "\nsmoothing = 0.1\nloss_scale = ", loss_scale,
                      "\ncheckpoint = ", checkpoint.empty() ? "None" : "'" + checkpoint + "'",
                      "\n");
}

class TransformerParityTest : public ::testing::TestWithParam<ParityCase> {};

TEST_P(TransformerParityTest, LossAndEveryGradientMatchNnTransformer) {
  absl::StatusOr<std::unique_ptr<Transformer>> transformer = MakeModel(GetParam());
  ASSERT_TRUE(transformer.ok()) << transformer.status();
  const Batch batch = MakeBatch();
  const float loss_scale = 1.0f / 12;  // The per-token mean of the 12 real targets.
  absl::StatusOr<LossStats> stats =
      (*transformer)
          ->ForwardBackward(
              batch,
              StepContext{.training = true, .seed = 1, .counter = 0, .loss_scale = loss_scale});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->target_tokens, 12);

  NamedTensors inputs = ReferenceInputs(batch);
  std::vector<std::string> outputs = {"loss"};
  const std::vector<Parameter*> parameters = (*transformer)->Parameters();
  for (size_t i = 0; i < parameters.size(); ++i) {
    inputs[absl::StrCat("p", i)] = parameters[i]->value;
    outputs.push_back(absl::StrCat("g", i));
  }
  absl::StatusOr<NamedTensors> ref = TorchReference(
      ReferenceHeader(parameters, GetParam(), "1.0 / 12", "") + kReference, inputs, outputs);
  ASSERT_TRUE(ref.ok()) << ref.status();

  const float expected_loss = ref->at("loss").data<float>()[0];
  EXPECT_NEAR(stats->loss, expected_loss, 1e-4 * expected_loss);
  double largest_gradient = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    largest_gradient = std::max(largest_gradient, MaxAbs(ref->at(absl::StrCat("g", i))));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& expected = ref->at(absl::StrCat("g", i));
    // The key bias adds q . b_k to every score of a query's row, which the
    // softmax cancels: its exact gradient is 0 (PyTorch's float64 gives
    // ~1e-18) and ours is float32 rounding, so it is held to an absolute bar
    // against the model's gradient scale instead of a relative one.
    const bool exactly_zero = MaxAbs(expected) < 1e-12 * largest_gradient;
    EXPECT_EQ(exactly_zero, parameters[i]->name.find("k_proj.bias") != std::string::npos)
        << parameters[i]->name;
    EXPECT_TRUE(AllClose(
        parameters[i]->grad, expected,
        exactly_zero ? Tolerance{.atol = 1e-6 * largest_gradient, .rtol = 0} : SumTolerance(1e-4)))
        << parameters[i]->name;
  }
}

// Our checkpoint, as written by training, read by PyTorch through the
// safetensors package and loaded into nn.Transformer: the same loss as our
// Evaluate on the same weights.
TEST_P(TransformerParityTest, CheckpointLoadsIntoNnTransformerWithTheSameLoss) {
  absl::StatusOr<std::unique_ptr<Transformer>> transformer = MakeModel(GetParam());
  ASSERT_TRUE(transformer.ok()) << transformer.status();
  // A few updates' worth of change, so the weights are not the initial ones
  // the reference could rebuild from a seed.
  for (Parameter* parameter : (*transformer)->Parameters()) {
    float* values = parameter->value.data<float>();
    for (int64_t i = 0; i < parameter->value.num_elements(); ++i) {
      values[i] += 0.01f * static_cast<float>((i * 7919) % 13 - 6);
    }
  }
  const Batch batch = MakeBatch();
  absl::StatusOr<LossStats> stats = (*transformer)->Evaluate(batch);
  ASSERT_TRUE(stats.ok()) << stats.status();

  Checkpoint checkpoint;
  for (Parameter* parameter : (*transformer)->Parameters()) {
    checkpoint.model.emplace_back(parameter->name, parameter->value);
  }
  checkpoint.state.set_update(7);
  checkpoint.vocabulary = "not read by this test";
  const std::string dir = absl::StrCat(::testing::TempDir(), "/parity_checkpoint_",
                                       ::testing::UnitTest::GetInstance()->random_seed(), "_",
                                       GetParam().norm, GetParam().positions);
  ASSERT_TRUE(WriteCheckpointTo(dir, checkpoint).ok());
  absl::StatusOr<NamedTensors> ref = TorchReference(
      ReferenceHeader((*transformer)->Parameters(), GetParam(), "1.0",
                      absl::StrCat(dir, "/", kModelFile)) +
          kReference,
      ReferenceInputs(batch), {"loss"});
  ASSERT_TRUE(ref.ok()) << ref.status();
  const float expected_loss = ref->at("loss").data<float>()[0];
  EXPECT_GT(expected_loss, 0);
  EXPECT_NEAR(stats->loss, expected_loss, 1e-4 * expected_loss);
}

INSTANTIATE_TEST_SUITE_P(
    PaperAndOptions, TransformerParityTest,
    ::testing::Values(ParityCase{config::ModelConfig::POST, config::ModelConfig::SINUSOIDAL},
                      ParityCase{config::ModelConfig::PRE, config::ModelConfig::LEARNED}),
    [](const ::testing::TestParamInfo<ParityCase>& info) {
      return absl::StrCat(config::ModelConfig::NormPosition_Name(info.param.norm), "Norm",
                          config::ModelConfig::PositionalEncoding_Name(info.param.positions));
    });

}  // namespace
}  // namespace tfm
