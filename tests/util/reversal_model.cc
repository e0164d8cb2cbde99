#include "tests/util/reversal_model.h"

#include <algorithm>

#include "core/status_macros.h"
#include "runtime/train/adam_optimizer.h"
#include "runtime/train/lr_schedule.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace testing {

Example Reversal(uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  const auto next = [&] {
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
  };
  const int length = 2 + static_cast<int>(next() % 5);
  Example example;
  for (int i = 0; i < length; ++i) example.source.push_back(4 + static_cast<int>(next() % 8));
  example.target.assign(example.source.rbegin(), example.source.rend());
  example.source.push_back(kReversalEos);
  example.target.push_back(kReversalEos);
  return example;
}

Batch MakeReversalBatch(const std::vector<Example>& examples) {
  Batch batch;
  batch.size = static_cast<int>(examples.size());
  for (const Example& e : examples) {
    batch.source_length = std::max<int>(batch.source_length, e.source.size());
    batch.target_length = std::max<int>(batch.target_length, e.target.size());
  }
  for (const Example& e : examples) {
    std::vector<int> source = e.source, target = e.target;
    batch.source_lengths.push_back(source.size());
    batch.target_lengths.push_back(target.size());
    source.resize(batch.source_length, kReversalPad);
    target.resize(batch.target_length, kReversalPad);
    batch.source.insert(batch.source.end(), source.begin(), source.end());
    batch.target.insert(batch.target.end(), target.begin(), target.end());
  }
  return batch;
}

config::ModelConfig ReversalModelConfig(int heads) {
  config::ModelConfig model;
  SetTinyModelShape(model, /*layers=*/2, heads);
  model.set_dropout(0.1f);
  return model;
}

absl::StatusOr<TrainedReversal> TrainReversalModel(int updates, uint64_t init_seed, int heads) {
  TrainedReversal trained;
  TFM_ASSIGN_OR_RETURN(
      trained.model,
      Transformer::Create(ReversalModelConfig(heads),
                          VocabularySpec{kReversalVocab, kReversalPad, kReversalBos, kReversalEos},
                          Device::Cpu(), init_seed));
  TFM_ASSIGN_OR_RETURN(InverseSqrtSchedule schedule, InverseSqrtSchedule::Create(32, 30));
  TFM_ASSIGN_OR_RETURN(
      AdamOptimizer adam,
      AdamOptimizer::Create(trained.model->Parameters(), config::AdamConfig(), schedule));
  std::vector<Example> held_out;
  for (int i = 0; i < 32; ++i) held_out.push_back(Reversal(100000 + i));
  TFM_ASSIGN_OR_RETURN(LossStats before, trained.model->Evaluate(MakeReversalBatch(held_out)));
  trained.initial_nll = before.nll;
  for (int update = 1; update <= updates; ++update) {
    std::vector<Example> examples;
    for (int i = 0; i < 32; ++i) examples.push_back(Reversal(update * 1000 + i));
    const Batch batch = MakeReversalBatch(examples);
    TFM_RETURN_IF_ERROR(trained.model->ZeroGrads());
    const StepContext step{.training = true,
                           .seed = 5,
                           .counter = static_cast<uint64_t>(update),
                           .loss_scale = 1.0f / batch.target_tokens()};
    TFM_RETURN_IF_ERROR(trained.model->ForwardBackward(batch, step).status());
    TFM_RETURN_IF_ERROR(adam.Step(update));
  }
  TFM_ASSIGN_OR_RETURN(LossStats after, trained.model->Evaluate(MakeReversalBatch(held_out)));
  trained.trained_nll = after.nll;
  return trained;
}

}  // namespace testing
}  // namespace tfm
