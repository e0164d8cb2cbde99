#include "core/train/trainer.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/op_registry.h"
#include "core/status_macros.h"
#include "core/train/stop_signal.h"
#include "ops/adam/grad_norm.h"

namespace tfm {
namespace {

double PerToken(double sum, int64_t tokens) { return tokens > 0 ? sum / tokens : 0.0; }

// Running sums between two log lines.
struct Window {
  LossStats stats;
  absl::Time start = absl::Now();
  void Reset() {
    stats = LossStats();
    start = absl::Now();
  }
};

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kMaxUpdates:
      return "reached max_steps";
    case StopReason::kTimeLimit:
      return "reached the time limit";
    case StopReason::kEarlyStopping:
      return "early stopping (patience exhausted)";
    case StopReason::kSignal:
      return "stopped by a signal";
  }
  return "?";
}

TrainerOptions TrainerOptions::FromConfig(const config::TrainConfig& train) {
  TrainerOptions options;
  options.max_updates = train.max_steps();
  options.update_freq = train.update_freq();
  options.clip_norm = train.clip_norm();
  options.log_every = train.log_every_steps();
  options.validate_every = train.validate_every_steps();
  options.validate_every_time = absl::Minutes(train.validate_every_minutes());
  options.checkpoint_every = train.checkpoint_every_steps();
  options.checkpoint_every_time = absl::Minutes(train.checkpoint_every_minutes());
  options.patience = train.patience();
  options.max_consecutive_nonfinite = train.max_consecutive_nonfinite();
  options.seed = train.seed();
  return options;
}

Trainer::Trainer(TrainableModel* model, AdamOptimizer* optimizer, TokenBatcher* batcher,
                 std::vector<Batch> valid, TrainerOptions options, TrainerHooks hooks)
    : model_(model),
      optimizer_(optimizer),
      batcher_(batcher),
      valid_(std::move(valid)),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      parameters_(model->Parameters()) {}

absl::Status Trainer::ZeroGradients() {
  for (Parameter* p : parameters_) {
    if (!p->grad.device().is_cpu()) {
      return absl::UnimplementedError(
          absl::StrCat("trainer: parameter ", p->name, " is on ", p->grad.device().ToString(),
                       "; this build trains on the CPU"));
    }
    std::memset(p->grad.raw_data(), 0, p->grad.nbytes());
  }
  return absl::OkStatus();
}

absl::Status Trainer::ScaleGradients(double factor) {
  Attrs attrs;
  attrs.Set("factor", factor);
  for (Parameter* p : parameters_) {
    TFM_RETURN_IF_ERROR(RunOp("scale_in_place", {p->grad}, attrs).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<LossStats> Trainer::AccumulateGradients(TrainProgress* progress) {
  TFM_RETURN_IF_ERROR(ZeroGradients());
  LossStats total;
  Batch batch;
  for (int i = 0; i < options_.update_freq; ++i) {
    TFM_ASSIGN_OR_RETURN(bool more, batcher_->Next(&batch));
    if (!more) {  // End of an epoch: the batcher starts the next one.
      TFM_ASSIGN_OR_RETURN(more, batcher_->Next(&batch));
      if (!more) return absl::FailedPreconditionError("trainer: the training corpus is empty");
    }
    StepContext context;
    context.training = true;
    context.seed = options_.seed;
    context.counter = static_cast<uint64_t>(progress->batches++);
    TFM_ASSIGN_OR_RETURN(LossStats stats, model_->ForwardBackward(batch, context));
    total += stats;
  }
  return total;
}

absl::StatusOr<ValidationLog> Trainer::Validate(const TrainProgress& progress) {
  LossStats total;
  for (const Batch& batch : valid_) {
    TFM_ASSIGN_OR_RETURN(LossStats stats, model_->Evaluate(batch));
    total += stats;
  }
  ValidationLog log;
  log.epoch = batcher_->position().epoch + 1;
  log.update = progress.update;
  log.loss = PerToken(total.loss, total.target_tokens);
  log.nll = PerToken(total.nll, total.target_tokens);
  log.ppl = std::exp(log.nll);
  return log;
}

absl::StatusOr<StopReason> Trainer::Run(TrainProgress* progress) {
  if (!hooks_.save_checkpoint) {
    return absl::InvalidArgumentError("trainer: no save_checkpoint hook");
  }
  if (options_.update_freq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: update_freq ", options_.update_freq, " must be >= 1"));
  }
  batcher_->Seek(progress->data);
  const absl::Time run_start = absl::Now();
  absl::Time last_validation = run_start, last_checkpoint = run_start;
  Window window;
  double last_gnorm = 0;
  const auto elapsed = [&] { return progress->train_seconds +
                                    absl::ToDoubleSeconds(absl::Now() - run_start); };
  // Progress as it stood before the update in flight: what a checkpoint
  // written at a stop records, so that the update is redone on resume.
  const auto save = [&](bool best) {
    TrainProgress saved = *progress;
    saved.train_seconds = elapsed();
    return hooks_.save_checkpoint(saved, best);
  };

  StopReason reason = StopReason::kMaxUpdates;
  while (progress->update < options_.max_updates) {
    if (StopSignalReceived() != 0) {
      reason = StopReason::kSignal;
      break;
    }
    if (absl::Now() - run_start >= options_.time_limit) {
      reason = StopReason::kTimeLimit;
      break;
    }
    TrainProgress before = *progress;
    TFM_ASSIGN_OR_RETURN(LossStats stats, AccumulateGradients(progress));
    if (StopSignalReceived() != 0) {  // Mid-update: drop it, redo it on resume.
      *progress = before;
      reason = StopReason::kSignal;
      break;
    }
    // The objective is the mean over the update's target tokens.
    TFM_RETURN_IF_ERROR(ScaleGradients(1.0 / std::max<int64_t>(1, stats.target_tokens)));
    std::vector<Tensor> grads;
    for (Parameter* p : parameters_) grads.push_back(p->grad);
    TFM_ASSIGN_OR_RETURN(const double gnorm, GlobalGradNorm(grads));
    if (!std::isfinite(stats.loss) || !std::isfinite(gnorm)) {
      ++progress->skipped_updates;
      ++progress->consecutive_nonfinite;
      progress->data = batcher_->position();
      std::fprintf(stderr, "update %lld skipped: loss %g, gradient norm %g (%lld in a row)\n",
                   static_cast<long long>(progress->update + 1), stats.loss, gnorm,
                   static_cast<long long>(progress->consecutive_nonfinite));
      if (progress->consecutive_nonfinite >= options_.max_consecutive_nonfinite) {
        return absl::InternalError(absl::StrCat(
            "training diverged: update ", progress->update + 1, " had loss ", stats.loss,
            " and gradient norm ", gnorm, ", the ", progress->consecutive_nonfinite,
            "th non-finite update in a row; no checkpoint was written after update ",
            progress->update, " (lower the learning rate or raise warmup_steps)"));
      }
      continue;
    }
    progress->consecutive_nonfinite = 0;
    if (options_.clip_norm > 0) {
      TFM_RETURN_IF_ERROR(ClipGradNorm(grads, options_.clip_norm).status());
    }
    TFM_RETURN_IF_ERROR(optimizer_->Step(progress->update + 1));
    ++progress->update;
    progress->data = batcher_->position();
    last_gnorm = gnorm;
    window.stats += stats;
    if (hooks_.on_update) hooks_.on_update(*progress);

    if (options_.log_every > 0 && progress->update % options_.log_every == 0) {
      const double seconds = std::max(1e-9, absl::ToDoubleSeconds(absl::Now() - window.start));
      UpdateLog log;
      log.epoch = progress->data.epoch + 1;
      log.update = progress->update;
      log.loss = PerToken(window.stats.loss, window.stats.target_tokens);
      log.nll = PerToken(window.stats.nll, window.stats.target_tokens);
      log.ppl = std::exp(log.nll);
      log.lr = optimizer_->LearningRate(progress->update);
      log.gnorm = last_gnorm;
      log.source_tokens_per_second = window.stats.source_tokens / seconds;
      log.target_tokens_per_second = window.stats.target_tokens / seconds;
      log.elapsed_seconds = elapsed();
      log.skipped_updates = progress->skipped_updates;
      if (hooks_.on_update_log) hooks_.on_update_log(log);
      window.Reset();
    }

    bool best = false;
    const bool validate_now =
        !valid_.empty() &&
        ((options_.validate_every > 0 && progress->update % options_.validate_every == 0) ||
         (options_.validate_every_time > absl::ZeroDuration() &&
          absl::Now() - last_validation >= options_.validate_every_time));
    if (validate_now) {
      TFM_ASSIGN_OR_RETURN(ValidationLog log, Validate(*progress));
      last_validation = absl::Now();
      best = log.loss < progress->best_valid_loss;
      log.best = best;
      if (best) {
        progress->best_valid_loss = log.loss;
        progress->validations_without_improvement = 0;
      } else {
        ++progress->validations_without_improvement;
      }
      if (hooks_.on_validation) hooks_.on_validation(log);
    }
    const bool checkpoint_now =
        best ||
        (options_.checkpoint_every > 0 && progress->update % options_.checkpoint_every == 0) ||
        (options_.checkpoint_every_time > absl::ZeroDuration() &&
         absl::Now() - last_checkpoint >= options_.checkpoint_every_time);
    if (checkpoint_now) {
      TFM_RETURN_IF_ERROR(save(best));
      last_checkpoint = absl::Now();
    }
    if (options_.patience > 0 &&
        progress->validations_without_improvement >= options_.patience) {
      reason = StopReason::kEarlyStopping;
      break;
    }
  }
  TFM_RETURN_IF_ERROR(save(false));
  return reason;
}

}  // namespace tfm
