#include "runtime/train/trainer.h"

#include <signal.h>

#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/philox.h"
#include "runtime/train/stop_signal.h"
#include "runtime/train/training_testing.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

constexpr int kPad = 0, kBos = 1, kEos = 2, kVocab = 12;
using testing::BigramModel;

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
        batching, [] { return std::unique_ptr<PairReader>(new CountingCorpus(40)); }, Encode, kPad);
    optimizer = std::make_unique<AdamOptimizer>(*AdamOptimizer::Create(
        model.Parameters(), train.adam(),
        *InverseSqrtSchedule::Create(4, train.warmup_steps(), train.lr_scale())));
    TokenBatcher valid_batcher(
        batching, [] { return std::unique_ptr<PairReader>(new CountingCorpus(10)); }, Encode, kPad);
    Batch batch;
    while (*valid_batcher.Next(&batch)) valid.push_back(batch);
  }

  // `read_every_update`: TrainerOptions::read_every_update (else the
  // figures are read at log lines).
  std::unique_ptr<Trainer> MakeTrainer(const config::TrainConfig& train, TrainerHooks hooks,
                                       bool read_every_update = false) {
    TrainerOptions options = TrainerOptions::FromConfig(train);
    options.read_every_update = read_every_update;
    return std::make_unique<Trainer>(&model, optimizer.get(), batcher.get(), valid, options,
                                     std::move(hooks));
  }

  BigramModel model{kVocab, kBos};
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

double WeightSum(BigramModel& model) {
  double sum = 0;
  for (float w : model.Parameters()[0]->value.ToVector<float>()) sum += w;
  return sum;
}

void Restore(const Snapshot& snapshot, TrainingRun* run) {
  std::copy(snapshot.weights.begin(), snapshot.weights.end(),
            run->model.Parameters()[0]->value.data<float>());
  auto state = run->optimizer->State();
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

TEST(TrainerTest, CooldownScalesTheRateOverTheRunsLastFraction) {
  config::TrainConfig train = SmallTraining();
  train.set_cooldown_fraction(0.5);
  TrainingRun run(train);
  std::vector<UpdateLog> logs;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  hooks.on_update = [&](const TrainProgress&, const UpdateLog& log) { logs.push_back(log); };
  TrainProgress progress;
  ASSERT_EQ(*run.MakeTrainer(train, hooks)->Run(&progress), StopReason::kMaxUpdates);
  ASSERT_EQ(logs.size(), 40u);
  // Update u is taken with u - 1 of the 40 done: the paper's rate through
  // update 21, then (1 - (u - 1) / 40) / 0.5 of it, falling by 0.05 an update.
  for (const UpdateLog& log : logs) {
    const double done = (log.update - 1) / 40.0;
    const double factor = done <= 0.5 ? 1.0 : (1.0 - done) / 0.5;
    EXPECT_NEAR(log.lr, run.optimizer->LearningRate(log.update) * factor, 1e-12)
        << "update " << log.update;
  }
  EXPECT_NEAR(logs.back().lr, 0.05 * run.optimizer->LearningRate(40), 1e-12);

  // The same run without the cooldown moves the weights further in its
  // last updates: the cooldown reached the optimizer, not just the log.
  config::TrainConfig plain = SmallTraining();
  TrainingRun plain_run(plain);
  TrainProgress plain_progress;
  ASSERT_EQ(*plain_run.MakeTrainer(plain, hooks)->Run(&plain_progress), StopReason::kMaxUpdates);
  EXPECT_NE(WeightSum(plain_run.model), WeightSum(run.model));
}

// 2N updates in one run equal N, a checkpoint, a fresh process state, N more.
TEST(TrainerTest, ResumeIsExact) {
  config::TrainConfig train = SmallTraining();
  train.set_max_steps(30);
  std::vector<Snapshot> saved;
  std::vector<double> straight_losses, resumed_losses;
  std::vector<std::optional<double>> straight_scores, resumed_scores;
  TrainerHooks hooks;
  TrainingRun straight(train);
  // A score of the weights, so that it too must come out the same.
  BigramModel* scored = &straight.model;
  hooks.validation_score.name = "bleu";
  hooks.validation_score.score = [&](const TrainProgress&) -> absl::StatusOr<double> {
    return std::fmod(WeightSum(*scored), 7.0);
  };
  hooks.on_validation = [&](const ValidationLog& log) { straight_scores.push_back(log.score); };
  hooks.save_checkpoint = [&](const TrainProgress& p, bool) { return absl::OkStatus(); };
  hooks.on_update_log = [&](const UpdateLog& log) { straight_losses.push_back(log.loss); };
  TrainProgress straight_progress;
  ASSERT_TRUE(straight.MakeTrainer(train, hooks)->Run(&straight_progress).ok());

  train.set_max_steps(15);
  TrainingRun first(train);
  scored = &first.model;
  hooks.on_validation = [&](const ValidationLog& log) { resumed_scores.push_back(log.score); };
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
  scored = &second.model;
  hooks.save_checkpoint = [&](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainProgress resumed = saved.back().progress;
  ASSERT_TRUE(second.MakeTrainer(train, hooks)->Run(&resumed).ok());

  EXPECT_EQ(resumed.update, straight_progress.update);
  EXPECT_EQ(resumed.batches, straight_progress.batches);
  EXPECT_EQ(resumed.data, straight_progress.data);
  EXPECT_EQ(second.model.Parameters()[0]->value.ToVector<float>(),
            straight.model.Parameters()[0]->value.ToVector<float>());
  EXPECT_EQ(resumed_losses, straight_losses);
  EXPECT_EQ(resumed_scores, straight_scores);
  EXPECT_EQ(resumed.best_valid_score, straight_progress.best_valid_score);
  EXPECT_EQ(resumed.validations_without_improvement,
            straight_progress.validations_without_improvement);
}

// Whether the figures are read every update or at log lines, a non-finite
// update is skipped (on the device in the second case) and counted alike.
TEST(TrainerTest, NonFiniteUpdatesAreSkippedAndRepeatedOnesStopTheRun) {
  for (const bool read_every_update : {false, true}) {
    SCOPED_TRACE(read_every_update ? "read every update" : "read at log lines");
    config::TrainConfig train = SmallTraining();
    train.set_max_consecutive_nonfinite(3);
    train.set_update_freq(1);
    TrainingRun run(train);
    run.model.nan_counters = {4};  // One bad batch: skipped, training goes on.
    TrainerHooks hooks;
    hooks.save_checkpoint = [&](const TrainProgress&, bool) { return absl::OkStatus(); };
    std::vector<int64_t> logged;
    hooks.on_update = [&](const TrainProgress& p, const UpdateLog& log) {
      EXPECT_EQ(p.update, log.update);
      logged.push_back(log.update);
    };
    TrainProgress progress;
    ASSERT_TRUE(run.MakeTrainer(train, hooks, read_every_update)->Run(&progress).ok());
    EXPECT_EQ(progress.skipped_updates, 1);
    EXPECT_EQ(progress.update, 40);
    EXPECT_EQ(progress.batches, 41);
    // Every applied update reported once, in order.
    ASSERT_EQ(logged.size(), 40u);
    for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(logged[i], i + 1);

    TrainingRun diverging(train);
    diverging.model.nan_counters = {10, 11, 12};
    int saves_after_update_10 = 0;
    hooks.on_update = nullptr;
    hooks.save_checkpoint = [&](const TrainProgress& p, bool) {
      if (p.update > 10) ++saves_after_update_10;
      return absl::OkStatus();
    };
    TrainProgress diverged;
    const absl::StatusOr<StopReason> result =
        diverging.MakeTrainer(train, hooks, read_every_update)->Run(&diverged);
    ASSERT_FALSE(result.ok());
    EXPECT_NE(std::string(result.status().message()).find("update 11"), std::string::npos)
        << result.status();
    EXPECT_EQ(saves_after_update_10, 0);
    EXPECT_EQ(diverged.update, 10);
  }
}

// Reading the figures at log lines changes nothing a run leaves (weights,
// moments, progress, every update's figures and every log line) from
// reading them every update, and it does wait until the log line: the
// figures of updates 1 to 4 arrive once update 5 is queued.
TEST(TrainerTest, ReadingAtLogLinesEqualsReadingEveryUpdate) {
  const config::TrainConfig train = SmallTraining();
  struct Result {
    Snapshot snapshot;
    std::vector<std::vector<double>> updates, lines;
    std::vector<int64_t> saved;
  };
  std::vector<int64_t> queued_when_read;
  auto run_with = [&](bool read_every_update) {
    TrainingRun run(train);
    Result result;
    int64_t queued = 0;
    TrainerHooks hooks;
    hooks.save_checkpoint = [&](const TrainProgress& p, bool) {
      result.saved.push_back(p.update);
      return absl::OkStatus();
    };
    hooks.on_update_queued = [&](const TrainProgress& p, double) { queued = p.update; };
    hooks.on_update = [&](const TrainProgress& p, const UpdateLog& log) {
      result.updates.push_back({static_cast<double>(p.update), log.loss, log.nll, log.gnorm,
                                log.lr, static_cast<double>(log.epoch)});
      if (!read_every_update) queued_when_read.push_back(queued);
    };
    hooks.on_update_log = [&](const UpdateLog& log) {
      result.lines.push_back({static_cast<double>(log.update), log.loss, log.nll, log.gnorm,
                              log.lr});
    };
    TrainProgress progress;
    EXPECT_EQ(*run.MakeTrainer(train, hooks, read_every_update)->Run(&progress),
              StopReason::kMaxUpdates);
    result.snapshot = Take(run, progress);
    return result;
  };
  const Result every = run_with(true);
  const Result at_lines = run_with(false);
  EXPECT_EQ(at_lines.snapshot.weights, every.snapshot.weights);
  EXPECT_EQ(at_lines.snapshot.moments, every.snapshot.moments);
  EXPECT_EQ(at_lines.snapshot.progress.update, 40);
  EXPECT_EQ(at_lines.snapshot.progress.batches, every.snapshot.progress.batches);
  EXPECT_EQ(at_lines.snapshot.progress.data, every.snapshot.progress.data);
  EXPECT_EQ(at_lines.snapshot.progress.best_valid_loss, every.snapshot.progress.best_valid_loss);
  EXPECT_EQ(at_lines.updates, every.updates);
  EXPECT_EQ(at_lines.lines, every.lines);
  EXPECT_EQ(at_lines.lines.size(), 8u);
  EXPECT_EQ(at_lines.saved, every.saved);
  ASSERT_EQ(queued_when_read.size(), 40u);
  for (int64_t update = 1; update <= 40; ++update) {
    EXPECT_EQ(queued_when_read[update - 1], (update + 4) / 5 * 5) << "update " << update;
  }
}

// A run that never logs still reads its figures, 1000 updates at a time,
// so that what waits unread stays bounded.
TEST(TrainerTest, FiguresAreReadAtLeastEvery1000Updates) {
  config::TrainConfig train = SmallTraining();
  train.set_log_every_steps(0);
  train.set_validate_every_steps(0);
  train.set_max_steps(1200);
  train.set_update_freq(1);
  TrainingRun run(train);
  int64_t queued = 0;
  std::vector<int64_t> queued_when_read;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  hooks.on_update_queued = [&](const TrainProgress& p, double) { queued = p.update; };
  hooks.on_update = [&](const TrainProgress&, const UpdateLog&) {
    queued_when_read.push_back(queued);
  };
  TrainProgress progress;
  ASSERT_EQ(*run.MakeTrainer(train, hooks)->Run(&progress), StopReason::kMaxUpdates);
  ASSERT_EQ(queued_when_read.size(), 1200u);
  EXPECT_EQ(queued_when_read.front(), 1000);  // Read when the 1000th was queued,
  EXPECT_EQ(queued_when_read[999], 1000);
  EXPECT_EQ(queued_when_read.back(), 1200);  // the rest at the end.
}

// Everything a run leaves that scaling must not change.
struct RunResult {
  std::vector<float> weights;
  std::vector<double> losses, gnorms, loss_scales;
  TrainProgress progress;
};

// `scale_on_device`: the model takes the loss scale from the trainer's
// tensor, so the trainer reads at log lines only (else every update).
RunResult TrainToTheEnd(const config::TrainConfig& train, float gradient_limit = 0,
                        absl::Status* status = nullptr, bool scale_on_device = false) {
  TrainingRun run(train);
  run.model.gradient_limit = gradient_limit;
  run.model.scale_on_device = scale_on_device;
  RunResult result;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  hooks.on_update = [&](const TrainProgress&, const UpdateLog& log) {
    result.losses.push_back(log.loss);
    result.gnorms.push_back(log.gnorm);
    result.loss_scales.push_back(log.loss_scale);
  };
  const absl::StatusOr<StopReason> stopped = run.MakeTrainer(train, hooks)->Run(&result.progress);
  if (status != nullptr) {
    *status = stopped.status();
  } else {
    EXPECT_TRUE(stopped.ok()) << stopped.status();
  }
  result.weights = run.model.Parameters()[0]->value.ToVector<float>();
  return result;
}

// The scale is a power of two: multiplying the loss's gradient by it and
// the summed gradients by its inverse is exact in f32, so without an
// overflow a scaled run has every bit of an unscaled one.
TEST(TrainerTest, DynamicLossScalingWithoutOverflowChangesNoBit) {
  config::TrainConfig off = SmallTraining();
  off.set_loss_scaling("off");
  config::TrainConfig scaled = SmallTraining();
  scaled.set_loss_scaling("dynamic");
  scaled.set_initial_loss_scale(1024);
  scaled.set_loss_scale_window(16);  // Doubles twice in 40 updates.
  EXPECT_FALSE(TrainerOptions::FromConfig(off).loss_scaling.dynamic);
  EXPECT_FALSE(TrainerOptions::FromConfig(SmallTraining()).loss_scaling.dynamic);  // auto, f32.
  ASSERT_TRUE(TrainerOptions::FromConfig(scaled).loss_scaling.dynamic);

  const RunResult plain = TrainToTheEnd(off);
  const RunResult result = TrainToTheEnd(scaled);
  EXPECT_EQ(result.weights, plain.weights);
  EXPECT_EQ(result.losses, plain.losses);
  EXPECT_EQ(result.gnorms, plain.gnorms);  // The norm of the unscaled gradients.
  EXPECT_EQ(result.progress.update, 40);
  EXPECT_EQ(result.progress.skipped_updates, 0);

  // The logs carry the scale the next update computes at; 0 when off.
  ASSERT_EQ(result.loss_scales.size(), 40u);
  EXPECT_EQ(result.loss_scales[0], 1024.0);
  EXPECT_EQ(result.loss_scales[15], 2048.0);  // After 16 clean updates.
  EXPECT_EQ(result.loss_scales[39], 4096.0);
  EXPECT_EQ(plain.loss_scales[0], 0.0);
  ASSERT_TRUE(result.progress.loss_scale.has_value());
  EXPECT_EQ(result.progress.loss_scale->scale, 4096.0);
  EXPECT_EQ(result.progress.loss_scale->clean_updates, 8);
  EXPECT_FALSE(plain.progress.loss_scale.has_value());
}

// Dynamic loss scaling from 2^22, doubling after 4 clean updates: with the
// model's gradients overflowing as f16's would, it halves several times.
config::TrainConfig OverflowingTraining() {
  config::TrainConfig train = SmallTraining();
  train.set_update_freq(1);
  train.set_loss_scaling("dynamic");
  train.set_initial_loss_scale(std::ldexp(1.0, 22));
  train.set_loss_scale_window(4);
  return train;
}

// The model overflows as f16 would (gradients beyond 65504 become
// infinite): an update whose scaled gradients overflow is skipped and the
// scale halved, not counted as a divergence; training goes on and learns.
TEST(TrainerTest, AnOverflowSkipsTheUpdateAndHalvesTheScale) {
  config::TrainConfig train = OverflowingTraining();
  train.set_max_consecutive_nonfinite(1);  // Overflows are not counted.
  const RunResult result = TrainToTheEnd(train, 65504.0f);
  EXPECT_EQ(result.progress.update, 40);
  EXPECT_GE(result.progress.skipped_updates, 1);
  EXPECT_EQ(result.progress.batches, 40 + result.progress.skipped_updates);
  ASSERT_FALSE(result.loss_scales.empty());
  EXPECT_LT(result.loss_scales.front(), std::ldexp(1.0, 22));  // Halved before the first.
  for (double scale : result.loss_scales) {
    int exponent = 0;
    EXPECT_EQ(std::frexp(scale, &exponent), 0.5) << scale;  // Powers of two only.
  }
  for (float w : result.weights) ASSERT_TRUE(std::isfinite(w));
  // It learns: the last five updates' loss well below the first five's.
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    first += result.losses[i];
    last += result.losses[result.losses.size() - 1 - i];
  }
  EXPECT_LT(last, 0.8 * first);

  // Resuming from the progress of update 20 (with its scale) repeats the
  // rest of the run bit for bit.
  config::TrainConfig first_half = train;
  first_half.set_max_steps(20);
  TrainingRun run(first_half);
  run.model.gradient_limit = 65504.0f;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainProgress progress;
  ASSERT_TRUE(run.MakeTrainer(first_half, hooks)->Run(&progress).ok());
  ASSERT_TRUE(progress.loss_scale.has_value());
  const Snapshot saved = Take(run, progress);
  TrainingRun second(train);
  second.model.gradient_limit = 65504.0f;
  Restore(saved, &second);
  TrainProgress resumed = saved.progress;
  ASSERT_TRUE(second.MakeTrainer(train, hooks)->Run(&resumed).ok());
  EXPECT_EQ(second.model.Parameters()[0]->value.ToVector<float>(), result.weights);
  EXPECT_EQ(resumed.skipped_updates, result.progress.skipped_updates);
  EXPECT_EQ(resumed.loss_scale->scale, result.progress.loss_scale->scale);
}

// With the scale kept on the device between reads (a model that takes it
// there), overflows halve it there and are settled when the figures are
// read. Read after every update (log_every 1) through that path, the run is
// the one whose host reads every update, bit for bit, skips and scales
// included. Read every 5, it differs only in the rate and bias correction
// of the updates queued after a skip before the read (one step on): it
// still skips, halves and learns; and a scale falling below its minimum
// stops it with the same error.
TEST(TrainerTest, OverflowsSettleAlikeWithTheScaleOnTheDevice) {
  config::TrainConfig train = OverflowingTraining();
  config::TrainConfig read_each = train;
  read_each.set_log_every_steps(1);
  const RunResult every = TrainToTheEnd(read_each, 65504.0f);
  const RunResult on_device = TrainToTheEnd(read_each, 65504.0f, nullptr, /*scale_on_device=*/true);
  EXPECT_GE(every.progress.skipped_updates, 2);
  EXPECT_EQ(on_device.weights, every.weights);
  EXPECT_EQ(on_device.losses, every.losses);
  EXPECT_EQ(on_device.gnorms, every.gnorms);
  EXPECT_EQ(on_device.loss_scales, every.loss_scales);
  EXPECT_EQ(on_device.progress.skipped_updates, every.progress.skipped_updates);
  EXPECT_EQ(on_device.progress.batches, every.progress.batches);
  ASSERT_TRUE(on_device.progress.loss_scale.has_value());
  EXPECT_EQ(on_device.progress.loss_scale->scale, every.progress.loss_scale->scale);
  EXPECT_EQ(on_device.progress.loss_scale->clean_updates,
            every.progress.loss_scale->clean_updates);

  const RunResult at_lines = TrainToTheEnd(train, 65504.0f, nullptr, /*scale_on_device=*/true);
  EXPECT_EQ(at_lines.progress.update, 40);
  EXPECT_GE(at_lines.progress.skipped_updates, 2);
  EXPECT_EQ(at_lines.progress.batches, 40 + at_lines.progress.skipped_updates);
  ASSERT_EQ(at_lines.loss_scales.size(), 40u);
  EXPECT_LT(at_lines.loss_scales.front(), std::ldexp(1.0, 22));  // Halved before the first.
  for (double scale : at_lines.loss_scales) {
    int exponent = 0;
    EXPECT_EQ(std::frexp(scale, &exponent), 0.5) << scale;  // Powers of two only.
  }
  EXPECT_LT(at_lines.losses.back(), 0.8 * at_lines.losses.front());

  train.set_min_loss_scale(1.0);
  absl::Status every_status, at_lines_status;
  TrainToTheEnd(train, 1e-30f, &every_status);
  TrainToTheEnd(train, 1e-30f, &at_lines_status, /*scale_on_device=*/true);
  EXPECT_FALSE(every_status.ok());
  EXPECT_EQ(at_lines_status, every_status);
}

// Gradients that are not finite at any scale: the scale falls to its
// minimum and the run stops with an error, with no update applied.
TEST(TrainerTest, ALossScaleBelowItsMinimumStopsTheRun) {
  config::TrainConfig train = SmallTraining();
  train.set_loss_scaling("dynamic");
  train.set_initial_loss_scale(8);
  train.set_min_loss_scale(1);
  absl::Status status;
  const RunResult result = TrainToTheEnd(train, 1e-30f, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("train.min_loss_scale 1"), std::string::npos) << status;
  EXPECT_EQ(result.progress.update, 0);
  EXPECT_EQ(result.progress.skipped_updates, 4);  // At 8, 4, 2 and 1.
}

// train.dtype reaches the model before its first pass; a model that cannot
// compute in it stops the run there with its reason, before any update.
TEST(TrainerTest, TheModelRefusingTrainDTypeStopsTheRunBeforeAnyUpdate) {
  config::TrainConfig train = SmallTraining();
  train.set_dtype("bf16");
  EXPECT_EQ(TrainerOptions::FromConfig(train).compute_dtype, DType::kBF16);
  EXPECT_EQ(TrainerOptions::FromConfig(SmallTraining()).compute_dtype, DType::kF32);
  TrainingRun run(train);
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainProgress progress;
  const absl::StatusOr<StopReason> result = run.MakeTrainer(train, hooks)->Run(&progress);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("train.dtype bf16: this model computes in f32 only"),
            std::string::npos)
      << result.status();
  EXPECT_EQ(progress.update, 0);
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
  hooks.on_update_queued = [&](const TrainProgress& p, double) {
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

// A score hook that returns `scores` in turn, recording the updates it was
// called at.
ValidationScorer ScoreSequence(std::vector<double> scores, std::vector<int64_t>* calls) {
  ValidationScorer scorer;
  scorer.name = "bleu";
  scorer.score = [scores, calls](const TrainProgress& p) -> absl::StatusOr<double> {
    calls->push_back(p.update);
    return scores[std::min(calls->size(), scores.size()) - 1];
  };
  return scorer;
}

// The loss and the score disagree on which validation is best; "best" and
// checkpoint_best follow the score.
TEST(TrainerTest, BestCheckpointFollowsTheScoreWhenChosen) {
  config::TrainConfig train = SmallTraining();
  TrainingRun run(train);
  std::vector<int64_t> calls;
  TrainerHooks hooks;
  hooks.validation_score = ScoreSequence({10, 5, 15, 12}, &calls);
  std::vector<int64_t> best_saves;
  hooks.save_checkpoint = [&](const TrainProgress& p, bool best) {
    if (best) best_saves.push_back(p.update);
    return absl::OkStatus();
  };
  std::vector<ValidationLog> validations;
  hooks.on_validation = [&](const ValidationLog& log) { validations.push_back(log); };
  TrainerOptions options = TrainerOptions::FromConfig(train);
  options.best_by_score = true;
  Trainer trainer(&run.model, run.optimizer.get(), run.batcher.get(), run.valid, options, hooks);
  TrainProgress progress;
  ASSERT_EQ(*trainer.Run(&progress), StopReason::kMaxUpdates);
  EXPECT_EQ(calls, (std::vector<int64_t>{10, 20, 30, 40}));  // Once per validation.
  ASSERT_EQ(validations.size(), 4u);
  // Update 20 has a better loss and a worse score, update 30 the reverse.
  EXPECT_LT(validations[1].loss, validations[0].loss);
  EXPECT_FALSE(validations[1].best);
  EXPECT_GT(validations[2].loss, validations[1].loss);
  EXPECT_TRUE(validations[2].best);
  EXPECT_EQ(*validations[2].score, 15);
  EXPECT_EQ(best_saves, (std::vector<int64_t>{10, 30}));
  EXPECT_EQ(progress.best_valid_score, 15);
  EXPECT_EQ(progress.best_valid_loss, validations.back().loss);  // Kept too.
  EXPECT_EQ(progress.validations_without_improvement, 1);
}

TEST(TrainerTest, EarlyStoppingFollowsTheScoreWhenChosen) {
  config::TrainConfig train = SmallTraining();
  train.set_patience(2);
  TrainingRun run(train);
  std::vector<int64_t> calls;
  TrainerHooks hooks;
  hooks.validation_score = ScoreSequence({10, 9, 8}, &calls);
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainerOptions options = TrainerOptions::FromConfig(train);
  options.best_by_score = true;
  TrainProgress progress;
  Trainer trainer(&run.model, run.optimizer.get(), run.batcher.get(), run.valid, options, hooks);
  EXPECT_EQ(*trainer.Run(&progress), StopReason::kEarlyStopping);  // The loss still falls.
  EXPECT_EQ(progress.update, 30);

  // By the loss (the default), the same scores stop nothing.
  TrainingRun by_loss(train);
  calls.clear();
  progress = TrainProgress();
  EXPECT_EQ(*by_loss.MakeTrainer(train, hooks)->Run(&progress), StopReason::kMaxUpdates);
  EXPECT_EQ(progress.best_valid_score, 10);
}

// A resumed run compares against the best score its checkpoint saved.
TEST(TrainerTest, ResumedRunKeepsTheBestScore) {
  config::TrainConfig train = SmallTraining();
  train.set_patience(3);
  TrainingRun run(train);
  std::vector<int64_t> calls;
  TrainerHooks hooks;
  hooks.validation_score = ScoreSequence({20, 25, 21}, &calls);
  std::vector<bool> saved_best;
  hooks.save_checkpoint = [&](const TrainProgress&, bool best) {
    saved_best.push_back(best);
    return absl::OkStatus();
  };
  TrainerOptions options = TrainerOptions::FromConfig(train);
  options.best_by_score = true;
  TrainProgress progress;
  progress.best_valid_score = 30;  // As restored from a checkpoint.
  progress.validations_without_improvement = 1;
  Trainer trainer(&run.model, run.optimizer.get(), run.batcher.get(), run.valid, options, hooks);
  EXPECT_EQ(*trainer.Run(&progress), StopReason::kEarlyStopping);
  EXPECT_EQ(progress.update, 20);
  EXPECT_EQ(progress.best_valid_score, 30);
  EXPECT_EQ(saved_best, (std::vector<bool>{false}));  // Only the final checkpoint.
}

TEST(TrainerTest, BestMetricResolvesAgainstTheScorer) {
  config::TrainConfig train;
  std::vector<int64_t> calls;
  const ValidationScorer bleu = ScoreSequence({1}, &calls);
  ValidationScorer off = bleu;
  off.score = nullptr;
  EXPECT_TRUE(*BestByScore(train, bleu));  // "auto" by default.
  EXPECT_FALSE(*BestByScore(train, off));
  train.set_best_checkpoint_metric("loss");
  EXPECT_FALSE(*BestByScore(train, bleu));
  train.set_best_checkpoint_metric("bleu");
  EXPECT_TRUE(*BestByScore(train, bleu));
  const absl::StatusOr<bool> missing = BestByScore(train, off);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("\"bleu\""), absl::string_view::npos);
  train.set_best_checkpoint_metric("f1");
  EXPECT_FALSE(BestByScore(train, bleu).ok());

  // The trainer refuses to follow a score it has no hook for.
  TrainingRun run(SmallTraining());
  TrainerOptions options = TrainerOptions::FromConfig(SmallTraining());
  options.best_by_score = true;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  TrainProgress progress;
  Trainer trainer(&run.model, run.optimizer.get(), run.batcher.get(), run.valid, options, hooks);
  EXPECT_EQ(trainer.Run(&progress).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfm
