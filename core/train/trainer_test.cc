#include "core/train/trainer.h"

#include <signal.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/philox.h"
#include "core/train/stop_signal.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

constexpr int kPad = 0, kBos = 1, kEos = 2, kVocab = 12;

// A corpus of digit strings whose target is the source counted up by one
// ("3 4 5" -> "4 5 6"): a bigram model learns it.
class CountingCorpus : public PairReader {
 public:
  explicit CountingCorpus(int pairs) : pairs_(pairs) {}
  absl::StatusOr<bool> Next(SentencePair* pair) override {
    if (next_ == pairs_) return false;
    const int start = next_ % 5, length = 1 + (next_ * 7) % 4;
    pair->source.clear();
    pair->target.clear();
    for (int i = 0; i < length; ++i) {
      absl::StrAppend(&pair->source, i ? " " : "", start + i);
      absl::StrAppend(&pair->target, i ? " " : "", start + i + 1);
    }
    ++next_;
    return true;
  }
  const SkipReport& skips() const override { return skips_; }

 private:
  int pairs_;
  int next_ = 0;
  SkipReport skips_;
};

Example Encode(const SentencePair& pair) {
  Example example;
  for (auto side : {&pair.source, &pair.target}) {
    std::vector<int>& ids = side == &pair.source ? example.source : example.target;
    for (absl::string_view word : absl::StrSplit(*side, ' ')) ids.push_back(3 + (word[0] - '0'));
    ids.push_back(kEos);
  }
  return example;
}

// Next target token from the previous one: logits = W[previous] (a V x V
// parameter), softmax cross-entropy with label smoothing 0.1. In training, a
// Philox mask keyed by (seed, counter) drops 10% of the positions, so exact
// resume needs the trainer to replay the counters.
class BigramModel : public TrainableModel {
 public:
  BigramModel() {
    weight_.name = "bigram.weight";
    weight_.value = *Tensor::Zeros({kVocab, kVocab}, DType::kF32);
    weight_.grad = *Tensor::Zeros({kVocab, kVocab}, DType::kF32);
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
    return Run(batch, &context);
  }
  absl::StatusOr<LossStats> Evaluate(const Batch& batch) override {
    if (constant_validation) return LossStats{1.0, 1.0, 1, 1};
    return Run(batch, nullptr);
  }

  std::set<uint64_t> nan_counters;
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
        const int previous = t == 0 ? kBos : batch.target[r * batch.target_length + t - 1];
        const int gold = batch.target[r * batch.target_length + t];
        if (training != nullptr) {
          const philox::Uint4 bits =
              philox::Block(training->seed, training->counter, r * 64 + t);
          if (philox::ToUniform(philox::Lane(bits, 0)) < 0.1f) continue;
        }
        double max = -1e30, sum = 0;
        for (int v = 0; v < kVocab; ++v) max = std::max<double>(max, w[previous * kVocab + v]);
        for (int v = 0; v < kVocab; ++v) sum += std::exp(w[previous * kVocab + v] - max);
        const double log_z = max + std::log(sum);
        for (int v = 0; v < kVocab; ++v) {
          const double log_p = w[previous * kVocab + v] - log_z;
          const double target = 0.9 * (v == gold) + 0.1 / kVocab;
          stats.loss -= target * log_p;
          if (v == gold) stats.nll -= log_p;
          if (training != nullptr) g[previous * kVocab + v] += std::exp(log_p) - target;
        }
        ++stats.target_tokens;
      }
    }
    return stats;
  }

  Parameter weight_;
};

config::TrainConfig SmallTraining() {
  config::TrainConfig train;
  train.set_warmup_steps(10);
  train.set_lr_scale(5.0);
  train.set_max_steps(40);
  train.set_log_every_steps(5);
  train.set_validate_every_steps(10);
  train.set_checkpoint_every_minutes(0);
  train.set_update_freq(2);
  return train;
}

// A model, its optimizer and its data, as a run (or a resumed run) builds them.
struct TrainingRun {
  explicit TrainingRun(const config::TrainConfig& train) {
    config::BatchingConfig batching;
    batching.set_max_source_tokens(12);
    batching.set_max_target_tokens(12);
    batching.set_shuffle_buffer(16);
    batcher = std::make_unique<TokenBatcher>(
        batching, [] { return std::unique_ptr<PairReader>(new CountingCorpus(40)); }, Encode,
        kPad);
    optimizer = std::make_unique<AdamOptimizer>(*AdamOptimizer::Create(
        model.Parameters(), train.adam(), *InverseSqrtSchedule::Create(4, train.warmup_steps(), train.lr_scale())));
    TokenBatcher valid_batcher(
        batching, [] { return std::unique_ptr<PairReader>(new CountingCorpus(10)); }, Encode,
        kPad);
    Batch batch;
    while (*valid_batcher.Next(&batch)) valid.push_back(batch);
  }

  std::unique_ptr<Trainer> MakeTrainer(const config::TrainConfig& train, TrainerHooks hooks) {
    return std::make_unique<Trainer>(&model, optimizer.get(), batcher.get(), valid,
                                     TrainerOptions::FromConfig(train), std::move(hooks));
  }

  BigramModel model;
  std::unique_ptr<AdamOptimizer> optimizer;
  std::unique_ptr<TokenBatcher> batcher;
  std::vector<Batch> valid;
};

// What a checkpoint holds, kept in memory: weights, moments, progress.
struct Snapshot {
  std::vector<float> weights;
  std::vector<std::vector<float>> moments;
  TrainProgress progress;
};

Snapshot Take(TrainingRun& run, const TrainProgress& progress) {
  Snapshot snapshot{run.model.Parameters()[0]->value.ToVector<float>(), {}, progress};
  for (const auto& [name, tensor] : run.optimizer->State()) {
    snapshot.moments.push_back(tensor.ToVector<float>());
  }
  return snapshot;
}

void Restore(const Snapshot& snapshot, TrainingRun* run) {
  std::copy(snapshot.weights.begin(), snapshot.weights.end(),
            run->model.Parameters()[0]->value.data<float>());
  const auto state = run->optimizer->State();
  for (size_t i = 0; i < state.size(); ++i) {
    std::copy(snapshot.moments[i].begin(), snapshot.moments[i].end(),
              state[i].second.data<float>());
  }
}

TEST(TrainerTest, ValidationLossFallsAndLogsCarryTheFigures) {
  const config::TrainConfig train = SmallTraining();
  TrainingRun run(train);
  std::vector<UpdateLog> logs;
  std::vector<ValidationLog> validations;
  int saves = 0;
  TrainerHooks hooks;
  hooks.save_checkpoint = [&](const TrainProgress&, bool) {
    ++saves;
    return absl::OkStatus();
  };
  hooks.on_update_log = [&](const UpdateLog& log) { logs.push_back(log); };
  hooks.on_validation = [&](const ValidationLog& log) { validations.push_back(log); };
  auto trainer = run.MakeTrainer(train, hooks);
  const ValidationLog before = *trainer->Validate(TrainProgress());
  EXPECT_NEAR(before.nll, std::log(kVocab), 1e-6);  // Zero weights: uniform.
  TrainProgress progress;
  ASSERT_EQ(*trainer->Run(&progress), StopReason::kMaxUpdates);
  EXPECT_EQ(progress.update, 40);
  EXPECT_EQ(progress.batches, 80);  // update_freq 2.
  ASSERT_EQ(validations.size(), 4u);
  // A bigram cannot guess a sentence's first token (it depends on the
  // source), so the loss stays well above 0; it must still fall steadily.
  EXPECT_LT(validations.back().loss, 0.6 * before.loss);
  EXPECT_LT(validations.back().loss, validations.front().loss);
  EXPECT_NEAR(validations.back().ppl, std::exp(validations.back().nll), 1e-9);
  ASSERT_EQ(logs.size(), 8u);
  EXPECT_EQ(logs[1].update, 10);
  EXPECT_GT(logs[1].target_tokens_per_second, 0);
  EXPECT_DOUBLE_EQ(logs[1].lr, run.optimizer->LearningRate(10));
  EXPECT_GT(logs[1].gnorm, 0);
  EXPECT_GE(saves, 2);  // Best validations and the final one.
}

// 2N updates in one run equal N, a checkpoint, a fresh process state, N more.
TEST(TrainerTest, ResumeIsExact) {
  config::TrainConfig train = SmallTraining();
  train.set_max_steps(30);
  std::vector<Snapshot> saved;
  std::vector<double> straight_losses, resumed_losses;
  TrainerHooks hooks;
  TrainingRun straight(train);
  hooks.save_checkpoint = [&](const TrainProgress& p, bool) { return absl::OkStatus(); };
  hooks.on_update_log = [&](const UpdateLog& log) { straight_losses.push_back(log.loss); };
  TrainProgress straight_progress;
  ASSERT_TRUE(straight.MakeTrainer(train, hooks)->Run(&straight_progress).ok());

  train.set_max_steps(15);
  TrainingRun first(train);
  hooks.save_checkpoint = [&](const TrainProgress& p, bool) {
    saved.push_back(Take(first, p));
    return absl::OkStatus();
  };
  hooks.on_update_log = [&](const UpdateLog& log) { resumed_losses.push_back(log.loss); };
  TrainProgress progress;
  ASSERT_TRUE(first.MakeTrainer(train, hooks)->Run(&progress).ok());
  ASSERT_EQ(saved.back().progress.update, 15);

  train.set_max_steps(30);
  TrainingRun second(train);  // New model, optimizer and batcher: nothing carried over.
  Restore(saved.back(), &second);
  hooks.save_checkpoint = [&](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainProgress resumed = saved.back().progress;
  ASSERT_TRUE(second.MakeTrainer(train, hooks)->Run(&resumed).ok());

  EXPECT_EQ(resumed.update, straight_progress.update);
  EXPECT_EQ(resumed.batches, straight_progress.batches);
  EXPECT_EQ(resumed.data, straight_progress.data);
  EXPECT_EQ(second.model.Parameters()[0]->value.ToVector<float>(),
            straight.model.Parameters()[0]->value.ToVector<float>());
  EXPECT_EQ(resumed_losses, straight_losses);
}

TEST(TrainerTest, NonFiniteUpdatesAreSkippedAndRepeatedOnesStopTheRun) {
  config::TrainConfig train = SmallTraining();
  train.set_max_consecutive_nonfinite(3);
  train.set_update_freq(1);
  TrainingRun run(train);
  run.model.nan_counters = {4};  // One bad batch: skipped, training goes on.
  int saves = 0;
  TrainerHooks hooks;
  hooks.save_checkpoint = [&](const TrainProgress&, bool) {
    ++saves;
    return absl::OkStatus();
  };
  TrainProgress progress;
  ASSERT_TRUE(run.MakeTrainer(train, hooks)->Run(&progress).ok());
  EXPECT_EQ(progress.skipped_updates, 1);
  EXPECT_EQ(progress.update, 40);
  EXPECT_EQ(progress.batches, 41);

  TrainingRun diverging(train);
  diverging.model.nan_counters = {10, 11, 12};
  saves = 0;
  int saves_after_update_10 = 0;
  hooks.save_checkpoint = [&](const TrainProgress& p, bool) {
    if (p.update > 10) ++saves_after_update_10;
    return absl::OkStatus();
  };
  TrainProgress diverged;
  const absl::StatusOr<StopReason> result =
      diverging.MakeTrainer(train, hooks)->Run(&diverged);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(std::string(result.status().message()).find("update 11"), std::string::npos)
      << result.status();
  EXPECT_EQ(saves_after_update_10, 0);
  EXPECT_EQ(diverged.update, 10);
}

TEST(TrainerTest, SignalStopsAtTheNextUpdateWithACheckpoint) {
  const config::TrainConfig train = SmallTraining();
  TrainingRun run(train);
  InstallStopSignalHandlers();
  std::vector<int64_t> saved_updates;
  TrainerHooks hooks;
  hooks.save_checkpoint = [&](const TrainProgress& p, bool) {
    saved_updates.push_back(p.update);
    return absl::OkStatus();
  };
  hooks.on_update = [&](const TrainProgress& p) {
    if (p.update == 7) raise(SIGTERM);
  };
  TrainProgress progress;
  const absl::StatusOr<StopReason> reason = run.MakeTrainer(train, hooks)->Run(&progress);
  ResetStopSignal();
  InstallStopSignalHandlers();  // The handler resets itself to the default.
  ASSERT_TRUE(reason.ok()) << reason.status();
  EXPECT_EQ(*reason, StopReason::kSignal);
  EXPECT_EQ(progress.update, 7);
  ASSERT_FALSE(saved_updates.empty());
  EXPECT_EQ(saved_updates.back(), 7);
}

TEST(TrainerTest, EarlyStoppingAfterPatienceValidationsWithoutImprovement) {
  config::TrainConfig train = SmallTraining();
  train.set_patience(2);
  train.set_validate_every_steps(1);
  TrainingRun run(train);
  run.model.constant_validation = true;
  TrainerHooks hooks;
  std::vector<bool> saved_best;
  hooks.save_checkpoint = [&](const TrainProgress&, bool best) {
    saved_best.push_back(best);
    return absl::OkStatus();
  };
  std::vector<ValidationLog> validations;
  hooks.on_validation = [&](const ValidationLog& log) { validations.push_back(log); };
  TrainProgress progress;
  const absl::StatusOr<StopReason> reason = run.MakeTrainer(train, hooks)->Run(&progress);
  ASSERT_TRUE(reason.ok()) << reason.status();
  EXPECT_EQ(*reason, StopReason::kEarlyStopping);
  ASSERT_EQ(validations.size(), 3u);  // The first is a new best, then two are not.
  EXPECT_TRUE(validations[0].best);
  EXPECT_FALSE(validations[1].best);
  EXPECT_FALSE(validations[2].best);
  EXPECT_EQ(progress.update, 3);
  EXPECT_EQ(saved_best, (std::vector<bool>{true, false}));  // The best, then the final.
}

}  // namespace
}  // namespace tfm
