#include "runtime/train/trainer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/allocator.h"
#include "core/check.h"
#include "core/status_macros.h"
#include "core/tensor_copy.h"
#include "layers/parameter_gradients.h"
#include "runtime/train/checkpoint_schedule.h"
#include "runtime/train/lr_schedule.h"
#include "runtime/train/stop_signal.h"
#include "ops/adam/grad_norm.h"
#include "ops/add/add.h"
#include "ops/fill/fill.h"

namespace tfm {
namespace {

double PerToken(double sum, int64_t tokens) { return tokens > 0 ? sum / tokens : 0.0; }

// The most updates whose figures wait unread (a few small device tensors
// each), whatever log_every is.
constexpr size_t kMaxPendingUpdates = 1000;

// The scalars an update's figures are read from: each batch's loss and
// nll, then the gradients' sum of squares.
std::vector<Tensor> ScalarsOf(const Trainer::QueuedGradients& queued) {
  std::vector<Tensor> scalars;
  for (const DeviceLossStats& sums : queued.batches) {
    scalars.push_back(sums.loss);
    scalars.push_back(sums.nll);
  }
  scalars.push_back(queued.sum_of_squares);
  if (queued.loss_scale.scale.defined()) {
    scalars.push_back(queued.loss_scale.scale);
    scalars.push_back(queued.loss_scale.clean_updates);
  }
  return scalars;
}

// This rank's figures from those scalars on the host (ScalarsOf's order):
// the batches' sums added in double in order, as the ranks' are.
Trainer::Gradients FiguresOf(const Trainer::QueuedGradients& queued,
                             absl::Span<const Tensor> host) {
  Trainer::Gradients figures;
  for (size_t i = 0; i < queued.batches.size(); ++i) {
    figures.stats += LossStats{host[2 * i].data<float>()[0], host[2 * i + 1].data<float>()[0],
                               queued.batches[i].source_tokens, queued.batches[i].target_tokens};
  }
  const size_t sum_of_squares = 2 * queued.batches.size();
  figures.gnorm = std::sqrt(static_cast<double>(host[sum_of_squares].data<float>()[0]));
  if (queued.loss_scale.scale.defined()) {
    figures.loss_scale =
        LossScaleState{host[sum_of_squares + 1].data<float>()[0],
                       static_cast<int64_t>(host[sum_of_squares + 2].data<float>()[0])};
  }
  return figures;
}

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
  options.checkpoint_every_validation = train.keep_best_checkpoints() > 0;
  options.max_consecutive_nonfinite = train.max_consecutive_nonfinite();
  options.seed = train.seed();
  options.cooldown_fraction = train.cooldown_fraction();
  options.distributed_timeout = absl::Seconds(train.distributed_timeout_seconds());
  // Config validation (ValidateTaskConfig) has parsed it before any trainer.
  const absl::StatusOr<DType> dtype = ParseDType(train.dtype());
  TFM_CHECK(dtype.ok(), "train.dtype reached the trainer unvalidated");
  options.compute_dtype = *dtype;
  options.loss_scaling = LossScalingFromConfig(train, options.compute_dtype);
  return options;
}

absl::StatusOr<bool> BestByScore(const config::TrainConfig& train, const ValidationScorer& scorer) {
  const std::string& metric = train.best_checkpoint_metric();
  const bool scored = static_cast<bool>(scorer.score);
  if (metric == "auto") return scored;
  if (metric == "loss") return false;
  if (scored && metric == scorer.name) return true;
  return absl::InvalidArgumentError(absl::StrCat(
      "train.best_checkpoint_metric: \"", metric, "\" is not a validation figure of this run: ",
      scored ? absl::StrCat("\"loss\", \"", scorer.name, "\" or \"auto\"")
             : "\"loss\" or \"auto\" (this run computes no validation score)"));
}

Trainer::Trainer(TrainableModel* model, AdamOptimizer* optimizer, BatchStream* batcher,
                 std::vector<Batch> valid, TrainerOptions options, TrainerHooks hooks,
                 Communicator* communicator)
    : model_(model),
      optimizer_(optimizer),
      batcher_(batcher),
      valid_(std::move(valid)),
      options_(std::move(options)),
      hooks_(std::move(hooks)),
      parameters_(model->Parameters()),
      communicator_(communicator != nullptr ? communicator : &single_process_),
      loss_scale_(InitialLossScale(options_.loss_scaling)) {
  SetHostHugePagesForTraining(true);  // core/allocator.h: 2-10% faster CPU updates.
}

// A fresh zero tensor on the gradient's device (the fill op), not a host
// memset: the same code zeroes CPU and GPU gradients. The model replaces
// Parameter::grad when it accumulates (AccumulateGrad), so nothing holds
// the old buffer. A model that accumulates only that way needs no zeros:
// its first gradient is taken as it is (16-bit ones widened after the pass,
// all in one cast), and the old buffers go back to the allocator before the
// forward pass.
absl::Status Trainer::ZeroGradients() {
  for (Parameter* p : parameters_) p->grad = Tensor();
  if (model_->AccumulatesThroughAccumulateGrad()) return absl::OkStatus();
  return CompleteGradients(parameters_);  // Zeros, all of them.
}

absl::Status Trainer::UseComputeDType() {
  return model_->SetComputeDType(options_.compute_dtype);
}

std::vector<Tensor> Trainer::GradientTensors() const {
  std::vector<Tensor> grads;
  grads.reserve(parameters_.size());
  for (const Parameter* p : parameters_) grads.push_back(p->grad);
  return grads;
}

absl::StatusOr<std::vector<Batch>> Trainer::NextBatches() {
  std::vector<Batch> batches(options_.update_freq);
  for (Batch& batch : batches) {
    TFM_ASSIGN_OR_RETURN(bool more, batcher_->Next(&batch));
    if (!more) {  // End of an epoch: the batcher starts the next one.
      TFM_ASSIGN_OR_RETURN(more, batcher_->Next(&batch));
      if (!more) {
        return absl::FailedPreconditionError(
            "trainer: no batch from data.train: the corpus is empty, or no pair fits "
            "data.batching (min_length, max_length, and max_source_tokens and "
            "max_target_tokens, a batch's budget, which a pair longer than it never fits); "
            "the preprocess command lists each skipped pair with its reason");
      }
    }
  }
  return batches;
}

absl::StatusOr<Trainer::QueuedGradients> Trainer::QueueGradients(
    const std::vector<Batch>& batches, uint64_t first_counter, int64_t update) {
  TFM_RETURN_IF_ERROR(UseComputeDType());
  const size_t rank = communicator_->rank(), ranks = communicator_->size();
  if ((ranks > 1 || options_.reduce_with_one_rank) && reducer_ == nullptr) {
    // Before the gradients are zeroed: it sizes its buckets by them.
    TFM_ASSIGN_OR_RETURN(reducer_, GradientReducer::Create(communicator_, parameters_));
  }
  TFM_RETURN_IF_ERROR(ZeroGradients());
  // The objective is the mean over the update's target tokens (on all
  // ranks: every rank has read every batch): known before the first forward
  // pass, so each backward scales its own gradient and no extra pass over
  // the gradients is needed.
  int64_t target_tokens = 0;
  for (const Batch& batch : batches) target_tokens += batch.target_tokens();
  QueuedGradients queued;
  const bool dynamic = options_.loss_scaling.dynamic;
  if (dynamic && !device_loss_scale_.scale.defined()) TFM_RETURN_IF_ERROR(PlaceLossScale());
  // Every batch of the update seeds its gradient with the same factor. A
  // power-of-two scale changes no bit of the f32 quotient's mantissa:
  // scale / T, scale * (1 / T) and, without a scale, 1 / T round alike.
  const float per_token = 1.0f / static_cast<float>(std::max<int64_t>(1, target_tokens));
  StepContext seed;
  seed.loss_scale = static_cast<float>(loss_scale_.scale) * per_token;
  if (dynamic && model_->TakesLossScaleOnDevice()) {
    // The device's scale: nothing read back between updates.
    TFM_ASSIGN_OR_RETURN(seed.loss_scale_on_device,
                         Fill({}, per_token, DType::kF32, device_loss_scale_.scale.device()));
    TFM_RETURN_IF_ERROR(MultiTensorScaleBy({seed.loss_scale_on_device}, device_loss_scale_.scale,
                                           /*reciprocal=*/false));
  }
  for (size_t i = rank; i < batches.size(); i += ranks) {
    StepContext context = seed;
    context.training = true;
    context.seed = options_.seed;
    context.counter = first_counter + i;
    const bool last = i + ranks >= batches.size();
    // Each batch's gradient is formed from zero and then added to the sum
    // of those before it, never accumulated into it: floating-point sums
    // then associate as they do when each rank computes one batch, so one
    // process with update_freq 2 and two ranks with one batch each give
    // the same bits.
    std::vector<Tensor> earlier;
    if (i != rank) {
      earlier = GradientTensors();
      TFM_RETURN_IF_ERROR(ZeroGradients());
    }
    const bool reducer_adds = reducer_ != nullptr && last;
    if (reducer_) reducer_->BeginBackward(update, last, reducer_adds ? earlier : std::vector<Tensor>());
    TFM_ASSIGN_OR_RETURN(DeviceLossStats sums,
                         model_->ForwardBackwardOnDevice(batches[i], context));
    TFM_RETURN_IF_ERROR(CompleteGradients(parameters_));
    queued.batches.push_back(std::move(sums));
    if (!earlier.empty() && !reducer_adds) {
      for (size_t k = 0; k < parameters_.size(); ++k) {
        TFM_ASSIGN_OR_RETURN(parameters_[k]->grad, Add(earlier[k], parameters_[k]->grad));
      }
    }
  }
  TFM_RETURN_IF_ERROR(CompleteGradients(parameters_));  // A rank without batches.
  if (reducer_) TFM_RETURN_IF_ERROR(reducer_->Finish());
  if (dynamic) {
    // Exact (a power of two); overflowed elements stay infinite or NaN, so
    // the norm below finds them.
    TFM_RETURN_IF_ERROR(
        MultiTensorScaleBy(GradientTensors(), device_loss_scale_.scale, /*reciprocal=*/true));
  }
  TFM_ASSIGN_OR_RETURN(grad_sum_of_squares_, GradSumOfSquares(GradientTensors()));
  queued.sum_of_squares = grad_sum_of_squares_;
  if (dynamic) {
    // The next update's scale, halved if these gradients overflowed.
    TFM_ASSIGN_OR_RETURN(device_loss_scale_,
                         LossScaleStep(device_loss_scale_, grad_sum_of_squares_,
                                       options_.loss_scaling.window, kMaxLossScale));
    queued.loss_scale = device_loss_scale_;
  }
  // The update's loss on the gradients' device, for ApplyUpdate's skip: a
  // non-finite sum when any batch's is (this rank's; with several ranks
  // the host has seen all of theirs before it applies).
  loss_guard_ = Tensor();
  for (const DeviceLossStats& sums : queued.batches) {
    Tensor loss = sums.loss;
    if (loss.device() != grad_sum_of_squares_.device()) {  // A model whose sums are the host's.
      TFM_ASSIGN_OR_RETURN(loss, CopyToDevice(loss, grad_sum_of_squares_.device()));
    }
    if (loss_guard_.defined()) {
      TFM_ASSIGN_OR_RETURN(loss_guard_, Add(loss_guard_, loss));
    } else {
      loss_guard_ = loss;
    }
  }
  if (!loss_guard_.defined()) loss_guard_ = grad_sum_of_squares_;  // A rank without batches.
  return queued;
}

absl::StatusOr<Trainer::Gradients> Trainer::ReadGradients(const QueuedGradients& queued,
                                                          int64_t update) {
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> host, CopyAllToHost(ScalarsOf(queued)));
  Gradients result = FiguresOf(queued, host);
  if (reducer_) {
    double sums[] = {result.stats.loss, result.stats.nll,
                     static_cast<double>(result.stats.source_tokens),
                     static_cast<double>(result.stats.target_tokens)};
    TFM_RETURN_IF_ERROR(
        communicator_->AllReduceSum(sums, absl::StrCat("loss sums (update ", update, ")")));
    result.stats = LossStats{sums[0], sums[1], static_cast<int64_t>(sums[2]),
                             static_cast<int64_t>(sums[3])};
  }
  return result;
}

absl::StatusOr<Trainer::Gradients> Trainer::ComputeGradients(const std::vector<Batch>& batches,
                                                             uint64_t first_counter,
                                                             int64_t update) {
  TFM_ASSIGN_OR_RETURN(const QueuedGradients queued,
                       QueueGradients(batches, first_counter, update));
  return ReadGradients(queued, update);
}

absl::Status Trainer::ApplyUpdate(int64_t update, double lr_factor) {
  if (!grad_sum_of_squares_.defined()) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer: update ", update, " applied before any ComputeGradients"));
  }
  return optimizer_->Step(update, lr_factor, grad_sum_of_squares_, options_.clip_norm,
                          &loss_guard_);
}

absl::Status Trainer::SkipOverflow(TrainProgress& progress, int64_t update, double gnorm,
                                   double scale_before) {
  ++progress.skipped_updates;
  // Not counted as a non-finite update in a row: the scale is searching
  // for its level (min_loss_scale bounds the search).
  std::fprintf(stderr,
               "update %lld skipped: its gradients overflowed at loss scale %g (norm %g); the "
               "scale is now %g\n",
               static_cast<long long>(update), scale_before, gnorm, loss_scale_.scale);
  return CheckAboveMinimum(options_.loss_scaling, loss_scale_, update);
}

absl::Status Trainer::PlaceLossScale() {
  const Device device = parameters_.empty() ? Device::Cpu() : parameters_[0]->value.device();
  TFM_ASSIGN_OR_RETURN(device_loss_scale_.scale,
                       Fill({}, loss_scale_.scale, DType::kF32, device));
  TFM_ASSIGN_OR_RETURN(device_loss_scale_.clean_updates,
                       Fill({}, static_cast<double>(loss_scale_.clean_updates), DType::kF32,
                            device));
  return absl::OkStatus();
}

absl::StatusOr<ValidationLog> Trainer::Validate(const TrainProgress& progress) {
  TFM_RETURN_IF_ERROR(UseComputeDType());
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
  if (hooks_.validation_score.score) {
    TFM_ASSIGN_OR_RETURN(log.score, hooks_.validation_score.score(progress));
  }
  return log;
}

absl::StatusOr<Trainer::Agreement> Trainer::Agree(Agreement rank_zero_view, int64_t update) {
  const bool zero = communicator_->rank() == 0;
  double flags[] = {StopSignalReceived() != 0 ? 1.0 : 0.0,
                    zero && rank_zero_view.time_up ? 1.0 : 0.0,
                    zero && rank_zero_view.validate_by_time ? 1.0 : 0.0,
                    zero && rank_zero_view.checkpoint_due ? 1.0 : 0.0,
                    zero ? rank_zero_view.lr_factor : 0.0};
  TFM_RETURN_IF_ERROR(communicator_->AllReduceSum(
      flags, absl::StrCat("the ranks' agreement before update ", update)));
  return Agreement{flags[0] > 0, flags[1] > 0, flags[2] > 0, flags[3] > 0, flags[4]};
}

absl::StatusOr<ValidationLog> Trainer::ValidateOnRankZero(const TrainProgress& progress) {
  if (communicator_->size() == 1) return Validate(progress);
  absl::StatusOr<ValidationLog> log = ValidationLog();
  if (communicator_->rank() == 0) log = Validate(progress);
  const ValidationLog figures = log.ok() ? *log : ValidationLog();
  double sent[] = {log.ok() ? 1.0 : 0.0, figures.loss, figures.nll, figures.ppl,
                   figures.score.has_value() ? 1.0 : 0.0, figures.score.value_or(0)};
  TFM_RETURN_IF_ERROR(communicator_->Broadcast(
      absl::Span<char>(reinterpret_cast<char*>(sent), sizeof(sent)), 0,
      absl::StrCat("rank 0's validation at update ", progress.update),
      options_.distributed_timeout));
  if (!log.ok()) return log.status();
  if (sent[0] == 0) {
    return absl::InternalError(absl::StrCat("rank 0's validation at update ", progress.update,
                                            " failed (its output says why)"));
  }
  ValidationLog received;
  received.epoch = batcher_->position().epoch + 1;
  received.update = progress.update;
  received.loss = sent[1];
  received.nll = sent[2];
  received.ppl = sent[3];
  if (sent[4] > 0) received.score = sent[5];
  return received;
}

absl::Status Trainer::SaveEverywhere(const TrainProgress& progress, bool best) {
  const absl::Status status = hooks_.save_checkpoint(progress, best);
  if (communicator_->size() == 1) return status;
  double failed[] = {status.ok() ? 0.0 : 1.0};
  TFM_RETURN_IF_ERROR(communicator_->AllReduceSum(
      failed, absl::StrCat("the checkpoint at update ", progress.update)));
  TFM_RETURN_IF_ERROR(status);
  if (failed[0] > 0) {
    return absl::InternalError(absl::StrCat("the checkpoint at update ", progress.update,
                                            " failed on rank 0 (its output says why)"));
  }
  return absl::OkStatus();
}

// One Run's clocks and the figures it carries from update to update.
struct Trainer::RunState {
  RunState(TrainProgress* progress, const TrainerOptions& options)
      : progress(progress),
        next_validation(start + options.validate_every_time),
        checkpoints(options.checkpoint_every, absl::ToDoubleMinutes(options.checkpoint_every_time),
                    progress->update, progress->train_seconds) {}

  // Training time across resumes.
  double Elapsed() const {
    return progress->train_seconds + absl::ToDoubleSeconds(absl::Now() - start);
  }

  TrainProgress* progress;
  const absl::Time start = absl::Now();
  // Validations by time fall on multiples of the interval since the run
  // began (8, 16, 24 ... minutes), not an interval after the previous one
  // ended, so curves of runs line up with each other and with a peer's.
  absl::Time next_validation;
  CheckpointSchedule checkpoints;
  // Sums since the last log line, and when it was written.
  LossStats window;
  absl::Time window_start = absl::Now();
  double last_gnorm = 0;
  double lr_factor = 1.0;  // The cooldown's at the last update.
  // Updates queued whose figures are not yet read, oldest first
  // (ReadPending); progress->update counts them as applied.
  std::vector<PendingUpdate> pending;
};

struct Trainer::PendingUpdate {
  QueuedGradients queued;
  double lr_factor = 1.0;  // The cooldown's, as applied.
  absl::Time start;        // When the host began it.
  int64_t epoch = 0;       // Its last batch's, counted from 1.
};

absl::Status Trainer::CheckRunnable() const {
  if (!hooks_.save_checkpoint) {
    return absl::InvalidArgumentError("trainer: no save_checkpoint hook");
  }
  if (options_.best_by_score && !hooks_.validation_score.score) {
    return absl::InvalidArgumentError("trainer: best_by_score without a validation_score hook");
  }
  if (options_.update_freq < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: update_freq ", options_.update_freq, " must be >= 1"));
  }
  if (options_.update_freq < communicator_->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "trainer: train.update_freq ", options_.update_freq, " is smaller than the ",
        communicator_->size(), " ranks: each update's update_freq batches are shared out "
        "among the ranks, so rank ", communicator_->size() - 1,
        " would have none; set --set=train.update_freq=", communicator_->size(),
        " (or a multiple) and max_*_tokens for the batch one rank computes at a time"));
  }
  return absl::OkStatus();
}

Trainer::Agreement Trainer::ClockView(const RunState& run) const {
  const TrainProgress& progress = *run.progress;
  // How much of the run is done, by its time limit or its updates,
  // whichever is further on: the cooldown's clock.
  double done = static_cast<double>(progress.update) / std::max<int64_t>(1, options_.max_updates);
  if (options_.time_limit != absl::InfiniteDuration() &&
      options_.time_limit > absl::ZeroDuration()) {
    done = std::max(done, absl::FDivDuration(absl::Now() - run.start, options_.time_limit));
  }
  Agreement clock;
  clock.time_up = absl::Now() - run.start >= options_.time_limit;
  clock.validate_by_time = options_.validate_every_time > absl::ZeroDuration() &&
                           absl::Now() >= run.next_validation;
  clock.checkpoint_due = run.checkpoints.Due(progress.update + 1, run.Elapsed());
  clock.lr_factor = CooldownFactor(options_.cooldown_fraction, done);
  return clock;
}

UpdateLog Trainer::MakeLog(const RunState& run, const LossStats& stats, absl::Time start,
                           absl::Time end, double gnorm, int64_t epoch) const {
  const TrainProgress& p = *run.progress;
  const double seconds = std::max(1e-9, absl::ToDoubleSeconds(end - start));
  UpdateLog log;
  log.epoch = epoch;
  log.update = p.update;
  log.loss = PerToken(stats.loss, stats.target_tokens);
  log.nll = PerToken(stats.nll, stats.target_tokens);
  log.ppl = std::exp(log.nll);
  log.lr = optimizer_->LearningRate(p.update, run.lr_factor);
  log.gnorm = gnorm;
  log.source_tokens_per_second = stats.source_tokens / seconds;
  log.target_tokens_per_second = stats.target_tokens / seconds;
  log.elapsed_seconds = run.Elapsed();
  log.skipped_updates = p.skipped_updates;
  if (options_.loss_scaling.dynamic) log.loss_scale = loss_scale_.scale;
  return log;
}

bool Trainer::ReadsEveryUpdate() const {
  return options_.read_every_update || communicator_->size() > 1 ||
         (options_.loss_scaling.dynamic && !model_->TakesLossScaleOnDevice());
}

absl::StatusOr<bool> Trainer::TrainOneUpdate(const Agreement& agreed, RunState& run) {
  TrainProgress& progress = *run.progress;
  PendingUpdate pending;
  pending.start = absl::Now();
  pending.lr_factor = agreed.lr_factor;
  TFM_ASSIGN_OR_RETURN(const std::vector<Batch> batches, NextBatches());
  const int64_t update = progress.update + 1;
  TFM_ASSIGN_OR_RETURN(pending.queued,
                       QueueGradients(batches, static_cast<uint64_t>(progress.batches), update));
  progress.batches += static_cast<int64_t>(batches.size());
  progress.data = batcher_->position();
  pending.epoch = progress.data.epoch + 1;
  if (ReadsEveryUpdate()) {
    // Settled before it is applied: the host decides the skip (over all
    // ranks' losses), and the loss scale changes before the next update.
    TFM_ASSIGN_OR_RETURN(const Gradients gradients, ReadGradients(pending.queued, update));
    TFM_ASSIGN_OR_RETURN(const bool applied, Settle(pending, gradients, absl::Now(), run));
    if (applied) TFM_RETURN_IF_ERROR(ApplyUpdate(update, pending.lr_factor));
    if (hooks_.on_update_queued) hooks_.on_update_queued(progress, run.Elapsed());
    return applied;
  }
  // Skipped on the device if its loss or norm is not finite; counted as
  // applied until ReadPending says otherwise.
  TFM_RETURN_IF_ERROR(ApplyUpdate(update, pending.lr_factor));
  run.pending.push_back(std::move(pending));
  ++progress.update;
  if (hooks_.on_update_queued) hooks_.on_update_queued(progress, run.Elapsed());
  // At each log line; and at most kMaxPendingUpdates apart, so that a run
  // that logs rarely or never holds a bounded number of unread figures.
  if ((options_.log_every > 0 && progress.update % options_.log_every == 0) ||
      run.pending.size() >= kMaxPendingUpdates) {
    return ReadPending(run);
  }
  return true;
}

absl::StatusOr<bool> Trainer::Settle(const PendingUpdate& pending, const Gradients& gradients,
                                     absl::Time end, RunState& run) {
  TrainProgress& progress = *run.progress;
  const LossStats& stats = gradients.stats;
  const double gnorm = gradients.gnorm;
  const int64_t update = progress.update + 1;  // Its number among the applied ones.
  if (options_.loss_scaling.dynamic && gradients.loss_scale.has_value()) {
    // The device moved the scale (StepLossScale); the host follows it.
    const double scale_before = loss_scale_.scale;
    loss_scale_ = *gradients.loss_scale;
    progress.loss_scale = loss_scale_;
    if (!std::isfinite(gnorm)) {
      TFM_RETURN_IF_ERROR(SkipOverflow(progress, update, gnorm, scale_before));
      return false;
    }
  }
  if (!std::isfinite(stats.loss) || !std::isfinite(gnorm)) {
    ++progress.skipped_updates;
    ++progress.consecutive_nonfinite;
    std::fprintf(stderr, "update %lld skipped: loss %g, gradient norm %g (%lld in a row)\n",
                 static_cast<long long>(update), stats.loss, gnorm,
                 static_cast<long long>(progress.consecutive_nonfinite));
    if (progress.consecutive_nonfinite >= options_.max_consecutive_nonfinite) {
      return absl::InternalError(absl::StrCat(
          "training diverged: update ", update, " had loss ", stats.loss,
          " and gradient norm ", gnorm, ", the ", progress.consecutive_nonfinite,
          "th non-finite update in a row; no checkpoint was written after update ",
          progress.update, " (lower the learning rate or raise warmup_steps)"));
    }
    return false;
  }
  progress.consecutive_nonfinite = 0;
  progress.update = update;
  run.lr_factor = pending.lr_factor;
  run.last_gnorm = gnorm;
  run.window += stats;
  if (hooks_.on_update) {
    hooks_.on_update(progress, MakeLog(run, stats, pending.start, end, gnorm, pending.epoch));
  }
  if (options_.log_every > 0 && progress.update % options_.log_every == 0) {
    if (hooks_.on_update_log) {
      hooks_.on_update_log(
          MakeLog(run, run.window, run.window_start, end, run.last_gnorm, pending.epoch));
    }
    run.window = LossStats();
    run.window_start = end;
  }
  return true;
}

absl::StatusOr<bool> Trainer::ReadPending(RunState& run) {
  if (run.pending.empty()) return true;
  // Every pending update's scalars with one wait (a single rank: its sums
  // are all there is).
  std::vector<Tensor> scalars;
  std::vector<size_t> first;  // Each update's first scalar.
  for (const PendingUpdate& pending : run.pending) {
    first.push_back(scalars.size());
    for (Tensor& scalar : ScalarsOf(pending.queued)) scalars.push_back(std::move(scalar));
  }
  TFM_ASSIGN_OR_RETURN(const std::vector<Tensor> host, CopyAllToHost(scalars));
  const absl::Time read = absl::Now();
  // Back to the updates applied before these; Settle counts each again.
  run.progress->update -= static_cast<int64_t>(run.pending.size());
  const std::vector<PendingUpdate> settling = std::move(run.pending);
  run.pending.clear();
  bool applied = true;
  for (size_t i = 0; i < settling.size(); ++i) {
    const size_t end_scalar = i + 1 < settling.size() ? first[i + 1] : host.size();
    const Gradients figures = FiguresOf(
        settling[i].queued, absl::MakeConstSpan(host).subspan(first[i], end_scalar - first[i]));
    const absl::Time end = i + 1 < settling.size() ? settling[i + 1].start : read;
    TFM_ASSIGN_OR_RETURN(applied, Settle(settling[i], figures, end, run));
  }
  return applied;
}

absl::StatusOr<bool> Trainer::ValidateIfDue(const Agreement& agreed, RunState& run) {
  TrainProgress& progress = *run.progress;
  const bool validate_now =
      !valid_.empty() &&
      ((options_.validate_every > 0 && progress.update % options_.validate_every == 0) ||
       agreed.validate_by_time);
  if (!validate_now) return false;
  const double validation_began = run.Elapsed();
  TFM_ASSIGN_OR_RETURN(ValidationLog log, ValidateOnRankZero(progress));
  log.elapsed_seconds = validation_began;
  if (agreed.validate_by_time) {
    // The next time on the grid (4, 8, 12 ... minutes into the run) that
    // leaves at least half an interval of training: a validation slower
    // than the interval (an untrained parser writes to the length limit,
    // a busy machine) would otherwise leave no time to train between.
    while (run.next_validation <= absl::Now() + options_.validate_every_time / 2) {
      run.next_validation += options_.validate_every_time;
    }
  }
  // Both bests are kept (a resumed run may choose the other metric); the
  // chosen one makes the checkpoint best and resets patience. A NaN score
  // or loss is never a new best.
  const bool best_loss = log.loss < progress.best_valid_loss;
  const bool best_score = log.score.has_value() && *log.score > progress.best_valid_score;
  if (best_loss) progress.best_valid_loss = log.loss;
  if (best_score) progress.best_valid_score = *log.score;
  const bool best = options_.best_by_score ? best_score : best_loss;
  log.best = best;
  progress.last_validation =
      TrainProgress::Validated{progress.update, log.loss, log.score, options_.best_by_score};
  if (best) {
    progress.validations_without_improvement = 0;
  } else {
    ++progress.validations_without_improvement;
  }
  if (hooks_.on_validation) hooks_.on_validation(log);
  return best;
}

absl::Status Trainer::Save(RunState& run, bool best) {
  TFM_RETURN_IF_ERROR(ReadPending(run).status());
  TrainProgress saved = *run.progress;
  saved.train_seconds = run.Elapsed();  // With this run's training time.
  return SaveEverywhere(saved, best);
}

absl::StatusOr<StopReason> Trainer::Run(TrainProgress* progress) {
  TFM_RETURN_IF_ERROR(CheckRunnable());
  batcher_->Seek(progress->data);
  if (options_.loss_scaling.dynamic) {
    // A resumed run goes on at its checkpoint's scale.
    if (progress->loss_scale.has_value()) loss_scale_ = *progress->loss_scale;
    progress->loss_scale = loss_scale_;
  } else {
    loss_scale_ = InitialLossScale(options_.loss_scaling);
    progress->loss_scale.reset();
  }
  if (options_.loss_scaling.dynamic) TFM_RETURN_IF_ERROR(PlaceLossScale());
  RunState run(progress, options_);
  StopReason reason = StopReason::kMaxUpdates;
  while (true) {
    if (progress->update >= options_.max_updates) {
      // Counted with the updates not yet read: settle them (a skip among
      // them leaves more to do).
      TFM_RETURN_IF_ERROR(ReadPending(run).status());
      if (progress->update >= options_.max_updates) break;
    }
    // Rank 0's view of the clocks; the others' is ignored.
    TFM_ASSIGN_OR_RETURN(const Agreement agreed, Agree(ClockView(run), progress->update + 1));
    if (agreed.stop_signal) {
      reason = StopReason::kSignal;
      break;
    }
    if (agreed.time_up) {
      reason = StopReason::kTimeLimit;
      break;
    }
    TFM_ASSIGN_OR_RETURN(bool applied, TrainOneUpdate(agreed, run));
    const bool validation_by_count =
        options_.validate_every > 0 && progress->update % options_.validate_every == 0;
    if (applied && (validation_by_count || agreed.validate_by_time || agreed.checkpoint_due)) {
      // Validations and checkpoints follow the applied count: read first.
      TFM_ASSIGN_OR_RETURN(applied, ReadPending(run));
    }
    if (!applied) continue;  // Skipped as non-finite.
    TFM_ASSIGN_OR_RETURN(const bool best, ValidateIfDue(agreed, run));
    const bool validated_now = progress->last_validation.has_value() &&
                               progress->last_validation->update == progress->update;
    if (best || agreed.checkpoint_due ||
        (options_.checkpoint_every_validation && validated_now)) {
      TFM_RETURN_IF_ERROR(Save(run, best));
      run.checkpoints.MarkSaved(progress->update, run.Elapsed());
    }
    if (options_.patience > 0 && progress->validations_without_improvement >= options_.patience) {
      reason = StopReason::kEarlyStopping;
      break;
    }
  }
  TFM_RETURN_IF_ERROR(Save(run, false));
  return reason;
}

}  // namespace tfm
