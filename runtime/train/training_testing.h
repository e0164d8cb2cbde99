// Test helpers for training: a small model with real gradients that any
// trainer test can afford to run to convergence, and a toy parallel corpus.
#ifndef TFM_RUNTIME_TRAIN_TRAINING_TESTING_H_
#define TFM_RUNTIME_TRAIN_TRAINING_TESTING_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/config/task_config.pb.h"
#include "core/philox.h"
#include "core/trainable_model.h"

namespace tfm {
namespace testing {

// Next target token from the previous one: logits = W[previous] (a V x V
// parameter), softmax cross-entropy with label smoothing 0.1. In training, a
// Philox mask keyed by (seed, counter) drops 10% of the positions, so exact
// resume needs the trainer to replay the counters.
class BigramModel : public TrainableModel {
 public:
  BigramModel(int vocab, int bos) : vocab_(vocab), bos_(bos) {
    weight_.name = "bigram.weight";
    weight_.value = *Tensor::Zeros({vocab, vocab}, DType::kF32);
    weight_.grad = *Tensor::Zeros({vocab, vocab}, DType::kF32);
  }
  std::vector<Parameter*> Parameters() override { return {&weight_}; }

  absl::StatusOr<LossStats> ForwardBackward(const Batch& batch,
                                            const StepContext& context) override {
    ++calls;
    if (nan_counters.count(context.counter)) {
      LossStats stats;
      stats.loss = std::nan("");
      stats.target_tokens = 1;
      return stats;
    }
    StepContext step = context;
    if (context.loss_scale_on_device.defined()) {  // A host tensor here.
      step.loss_scale = context.loss_scale_on_device.data<float>()[0];
    }
    const LossStats stats = Run(batch, &step);
    if (gradient_limit > 0) {
      // As f16 would hold the pass's gradients: beyond its range, infinite.
      float* g = weight_.grad.data<float>();
      for (int64_t i = 0; i < weight_.grad.num_elements(); ++i) {
        if (std::abs(g[i]) > gradient_limit) g[i] = std::copysign(INFINITY, g[i]);
      }
    }
    return stats;
  }
  absl::StatusOr<LossStats> Evaluate(const Batch& batch) override {
    if (constant_validation) return LossStats{1.0, 1.0, 1, 1};
    return Run(batch, nullptr);
  }

  bool TakesLossScaleOnDevice() const override { return scale_on_device; }

  std::set<uint64_t> nan_counters;
  // Takes a dynamic loss scale as the Transformer does, from the trainer's
  // device tensor (the CPU's here), so that the trainer keeps it there.
  bool scale_on_device = false;
  // > 0: gradient elements beyond it in magnitude overflow to infinity (65504
  // is f16's largest), so that dynamic loss scaling can be tested in f32.
  float gradient_limit = 0;
  bool constant_validation = false;  // A model whose validation never improves.
  int calls = 0;

 private:
  LossStats Run(const Batch& batch, const StepContext* training) {
    LossStats stats;
    const float* w = weight_.value.data<float>();
    float* g = weight_.grad.data<float>();
    for (int r = 0; r < batch.size; ++r) {
      stats.source_tokens += batch.source_lengths[r];
      for (int t = 0; t < batch.target_lengths[r]; ++t) {
        const int previous = t == 0 ? bos_ : batch.target[r * batch.target_length + t - 1];
        const int gold = batch.target[r * batch.target_length + t];
        if (training != nullptr) {
          const philox::Uint4 bits =
              philox::Block(training->seed, training->counter, r * 64 + t);
          if (philox::ToUniform(philox::Lane(bits, 0)) < 0.1f) continue;
        }
        double max = -1e30, sum = 0;
        for (int v = 0; v < vocab_; ++v) max = std::max<double>(max, w[previous * vocab_ + v]);
        for (int v = 0; v < vocab_; ++v) sum += std::exp(w[previous * vocab_ + v] - max);
        const double log_z = max + std::log(sum);
        for (int v = 0; v < vocab_; ++v) {
          const double log_p = w[previous * vocab_ + v] - log_z;
          const double target = 0.9 * (v == gold) + 0.1 / vocab_;
          stats.loss -= target * log_p;
          if (v == gold) stats.nll -= log_p;
          if (training != nullptr) {
            g[previous * vocab_ + v] += training->loss_scale * (std::exp(log_p) - target);
          }
        }
        ++stats.target_tokens;
      }
    }
    return stats;
  }

  int vocab_;
  int bos_;
  Parameter weight_;
};


// Writes a toy EN-DE corpus (60 training pairs, 3 validation pairs) as
// PLAIN_TEXT files in `dir` and returns a data section reading it, with a
// 40-piece vocabulary and small token budgets.
config::DataConfig WriteToyCorpus(const std::string& dir);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TRAINING_TESTING_H_
