// The training loop: token-budget batches accumulated into updates, Adam with
// the paper's schedule, skipping of non-finite updates, validation (the loss,
// and a task's score such as BLEU) with the best checkpoint and early
// stopping by either, and the points where checkpoints are due. What a checkpoint
// holds and how it is written (runtime/train/checkpoint) and how progress is
// logged are hooks, so the loop reads as the algorithm it is.
//
// Exact resume: everything random or ordered is a pure function of
// TrainProgress (the batcher's position, the update and batch counters that
// key dropout), which a checkpoint saves beside the weights and the
// optimizer moments. Training 2N updates equals N, save, load, N more.
//
// Data parallelism (runtime/distributed): every rank reads the whole batch
// stream and takes its share of each update's update_freq batches (batch i
// of the update goes to rank i mod ranks, with the dropout counter it has
// in a single process); the loss is scaled by the update's target tokens
// over all ranks, and the gradients are summed across ranks in buckets while
// backward runs. So N ranks update the weights exactly as one process does
// with the same update_freq, and a checkpoint's data position means the
// same on any number of ranks. Decisions taken by the clock (time limit,
// validation and checkpoints by minutes) are rank 0's, and a stop signal on
// any rank stops all, agreed at the start of each update; rank 0 alone
// validates (the others receive its figures) and writes through the hooks.
//
// Reading the figures: an update's loss and gradient norm are computed on
// the model's device, and reading them back makes the host wait for the
// device's queue to drain, so a GPU would idle while the host queues the
// next update. So a single-rank run reads them only where it needs them: at
// each log line (every log_every updates), a validation, a checkpoint and
// the end (and at least every 1000 updates), all the updates since the last
// read with one wait. Meanwhile a non-finite update (its loss or gradient
// norm) is skipped on the device (multi_tensor_adam's guard), and counted
// as applied until the read, which settles the count, the skips, the
// divergence error and the per-update hooks in order; figures and events
// are those of a run that reads every update. One difference: the updates
// queued after a skipped one and before the read take the schedule's rate
// and Adam's bias correction one number on (a training loop's torch.optim
// scheduler goes on likewise after GradScaler skips a step; torch's Adam
// does not count the skipped step, fairseq counts neither). Dynamic loss scaling keeps its scale on the
// device too (ops/loss_scale), where each update's overflow halves it, for
// a model that takes it there (TakesLossScaleOnDevice); a model that takes
// its scale from the host reads every update. So do several ranks, which
// sum their losses on the host to agree on a skip (their NCCL collectives
// wait on the host anyway).
#ifndef TFM_RUNTIME_TRAIN_TRAINER_H_
#define TFM_RUNTIME_TRAIN_TRAINER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/token_batcher.h"
#include "core/trainable_model.h"
#include "ops/loss_scale/loss_scale.h"
#include "runtime/distributed/communicator.h"
#include "runtime/distributed/gradient_reducer.h"
#include "runtime/distributed/local_communicator.h"
#include "runtime/train/adam_optimizer.h"
#include "runtime/train/loss_scaling.h"

namespace tfm {

// Everything besides weights and optimizer moments that a resumed run needs.
struct TrainProgress {
  int64_t update = 0;   // Updates applied (skipped ones not counted).
  int64_t batches = 0;  // Batches consumed: the dropout counter.
  BatchPosition data;   // The first batch of the next update.
  int64_t skipped_updates = 0;
  int64_t consecutive_nonfinite = 0;
  double best_valid_loss = std::numeric_limits<double>::infinity();
  // The highest ValidationScorer score so far.
  double best_valid_score = -std::numeric_limits<double>::infinity();
  // Validations since the last new best by the chosen metric
  // (TrainerOptions::best_by_score): early stopping's count.
  int64_t validations_without_improvement = 0;
  double train_seconds = 0;  // Wall time spent training in earlier runs.
  // Dynamic loss scaling's state (runtime/train/loss_scaling.h); none when
  // the run does not scale, or has not begun.
  std::optional<LossScaleState> loss_scale;
  // This run's latest validation: a checkpoint saved at its update records
  // it (train.keep_best_checkpoints ranks checkpoints by it). Not resumed.
  struct Validated {
    int64_t update = 0;
    double loss = 0;
    std::optional<double> score;
    bool ranked_by_score = false;  // TrainerOptions::best_by_score.
  };
  std::optional<Validated> last_validation;
};

// One log line's figures (per token averages over the updates since the
// last line).
struct UpdateLog {
  int64_t epoch = 0;
  int64_t update = 0;
  double loss = 0;  // Label-smoothed cross-entropy per target token (nats).
  double nll = 0;   // Per target token (nats).
  double ppl = 0;   // exp(nll).
  double lr = 0;
  double gnorm = 0;  // Global gradient norm before clipping (last update).
  double source_tokens_per_second = 0;
  double target_tokens_per_second = 0;
  double elapsed_seconds = 0;
  int64_t skipped_updates = 0;
  double loss_scale = 0;  // Dynamic loss scaling's scale; 0 when off.
};

struct ValidationLog {
  int64_t epoch = 0;
  int64_t update = 0;
  double loss = 0;  // Per target token.
  double nll = 0;
  double ppl = 0;
  std::optional<double> score;  // The task's score (BLEU), when it has one.
  bool best = false;            // A new best by the chosen metric.
  // Training time when the validation began (across resumes): the x of a
  // score-against-time curve.
  double elapsed_seconds = 0;
};

// A task's own measure of the model at a validation, higher is better: BLEU
// for translation. The loss says how well the model predicts the
// references one token at a time; the score says how good its own outputs
// are, which is what the model is for.
struct ValidationScorer {
  // "bleu": the label in logs, the CSV column valid_<name>, and the value
  // of train.best_checkpoint_metric that chooses it.
  std::string name;
  // Scores the model as it stands (dropout off). Must leave the training
  // state alone (batcher position, dropout counters, weights), so that a
  // run with the score trains exactly as one without it.
  std::function<absl::StatusOr<double>(const TrainProgress&)> score;
};

// Why Run returned.
enum class StopReason { kMaxUpdates, kTimeLimit, kEarlyStopping, kSignal };
const char* StopReasonName(StopReason reason);

struct TrainerHooks {
  // Writes a checkpoint of the model, optimizer and `progress` (required).
  std::function<absl::Status(const TrainProgress& progress, bool best)> save_checkpoint;
  std::function<void(const UpdateLog&)> on_update_log;
  std::function<void(const ValidationLog&)> on_validation;
  // Called for every applied update with that update's own figures, once
  // they are read (see "Reading the figures" in the Trainer's comment):
  // with `progress` as it stood after that update (tests, per-update logs).
  std::function<void(const TrainProgress&, const UpdateLog&)> on_update;
  // Called as soon as each update is queued, before its figures are read,
  // with the updates so far (those not yet read counted as applied) and
  // the training time: progress bars, which must move every update.
  std::function<void(const TrainProgress&, double elapsed_seconds)> on_update_queued;
  // Optional: called at each validation after the loss.
  ValidationScorer validation_score;
};

struct TrainerOptions {
  int64_t max_updates = 0;                               // Stop after this many updates in total.
  absl::Duration time_limit = absl::InfiniteDuration();  // For this run.
  int update_freq = 1;
  double clip_norm = 0;
  int64_t log_every = 100;
  int64_t validate_every = 0;  // Updates; 0: never by count.
  absl::Duration validate_every_time = absl::ZeroDuration();
  int64_t checkpoint_every = 0;  // Updates; 0: never by count.
  absl::Duration checkpoint_every_time = absl::ZeroDuration();
  int patience = 0;
  // "best" (checkpoint_best, patience) follows the validation score rather
  // than the loss; needs TrainerHooks::validation_score.
  bool best_by_score = false;
  // Save a checkpoint at every validation, not only at a new best
  // (train.keep_best_checkpoints > 0: the pruning then keeps the best).
  bool checkpoint_every_validation = false;
  int max_consecutive_nonfinite = 10;
  uint64_t seed = 1;
  // The last fraction of the run over which the rate falls to 0 (0: none;
  // train.cooldown_fraction).
  double cooldown_fraction = 0;
  // Bounds each wait for other ranks (see runtime/distributed/communicator.h).
  absl::Duration distributed_timeout = absl::Minutes(10);
  // train.dtype: what the model's passes compute in (bf16: mixed precision,
  // TrainableModel::SetComputeDType). The optimizer, the gradient norm and
  // the ranks' sums see f32 gradients and weights whatever it is.
  DType compute_dtype = DType::kF32;
  // train.loss_scaling resolved for compute_dtype: dynamic for f16.
  LossScaling loss_scaling;
  // Sum the gradients through the communicator's GradientReducer even with
  // one rank (tests: the NCCL path on one GPU); several ranks always do.
  bool reduce_with_one_rank = false;
  // Read each update's loss and gradient norm before the next (see
  // "Reading the figures"): what dynamic loss scaling and several ranks
  // do anyway; tests set it to compare the two ways.
  bool read_every_update = false;

  // best_by_score stays false: it depends on the task's scorer (see
  // BestByScore).
  static TrainerOptions FromConfig(const config::TrainConfig& train);
};

// train.best_checkpoint_metric resolved against the task's scorer (whose
// score function is empty when the task has none or it is turned off):
// true when "best" follows the score. "auto" picks the score when there is
// one; "loss" never does; any other value must be the scorer's name.
absl::StatusOr<bool> BestByScore(const config::TrainConfig& train, const ValidationScorer& scorer);

class Trainer {
 public:
  // None of the pointers is owned; all must outlive the trainer. `valid`
  // may be empty (no validation). Without a communicator the trainer is
  // the only rank.
  Trainer(TrainableModel* model, AdamOptimizer* optimizer, BatchStream* batcher,
          std::vector<Batch> valid, TrainerOptions options, TrainerHooks hooks,
          Communicator* communicator = nullptr);

  // Trains from `progress` (a fresh TrainProgress or one restored from a
  // checkpoint, whose weights and moments are already loaded) until a stop
  // condition; writes a final checkpoint unless the run failed. Repeated
  // non-finite updates are an error naming the update, with no checkpoint
  // written after them.
  absl::StatusOr<StopReason> Run(TrainProgress* progress);

  // Validation loss over the whole validation set, and the task's score
  // when there is a scorer.
  absl::StatusOr<ValidationLog> Validate(const TrainProgress& progress);

  // One update's work, also timed on its own by //benchmarks:train_step:
  // the gradients of the mean loss over `batches` (their dropout counters
  // first_counter, first_counter + 1, ...; this rank computes its share and
  // the sum over the ranks lands in every rank's parameters), and then the
  // clipped Adam step numbered `update`.
  struct Gradients {
    LossStats stats;   // Over all ranks.
    double gnorm = 0;  // Global norm before clipping.
    // Dynamic loss scaling's state after the update (its device's).
    std::optional<LossScaleState> loss_scale;
  };
  // The norm is read back to the host (the skipping of non-finite updates
  // and the log need it); its square stays on the device for ApplyUpdate.
  // With dynamic loss scaling, the loss is multiplied by loss_scale() and
  // the gradients divided by it before their norm: the figures and the
  // gradients are the unscaled ones (a non-finite norm: an overflow).
  absl::StatusOr<Gradients> ComputeGradients(const std::vector<Batch>& batches,
                                             uint64_t first_counter, int64_t update);
  // ComputeGradients in two halves: the work queued on the device, and its
  // figures read back (over all ranks).
  struct QueuedGradients {
    std::vector<DeviceLossStats> batches;  // This rank's, on the model's device.
    Tensor sum_of_squares;                 // Of the gradients (all ranks'), on their device.
    LossScaleTensors loss_scale;           // After the update; with dynamic loss scaling.
  };
  absl::StatusOr<QueuedGradients> QueueGradients(const std::vector<Batch>& batches,
                                                 uint64_t first_counter, int64_t update);
  absl::StatusOr<Gradients> ReadGradients(const QueuedGradients& queued, int64_t update);
  // One launch over all parameters (multi_tensor_adam), clipping by the
  // last QueueGradients' norm read on the device; skipped there, leaving
  // the weights and moments as they were, when that norm or the loss is
  // not finite.
  absl::Status ApplyUpdate(int64_t update, double lr_factor = 1.0);

  // What ComputeGradients multiplies the loss by: 1 without dynamic loss
  // scaling, else the run's scale as last read from the device.
  double loss_scale() const { return loss_scale_.scale; }

 private:
  // The next update_freq batches, across an epoch's end.
  absl::StatusOr<std::vector<Batch>> NextBatches();
  // Zero gradients before a batch: undefined where the model accumulates
  // only through AccumulateGrad (it takes its first gradient as it is, and
  // CompleteGradients finishes them after the batch), else tensors of zeros.
  absl::Status ZeroGradients();
  // Counts update `update`, whose gradients overflowed under dynamic loss
  // scaling and whose scale was halved on the device from `scale_before`
  // (an error below the minimum).
  absl::Status SkipOverflow(TrainProgress& progress, int64_t update, double gnorm,
                            double scale_before);
  // The run's loss scale (loss_scale_) on the parameters' device, where the
  // updates move it.
  absl::Status PlaceLossScale();
  // True when every update's figures are read before the next (see
  // "Reading the figures").
  bool ReadsEveryUpdate() const;
  // Tells the model options_.compute_dtype before a pass (cheap; the model
  // may refuse the dtype on its device).
  absl::Status UseComputeDType();
  // Every parameter's gradient tensor, in the parameters' order.
  std::vector<Tensor> GradientTensors() const;
  // What the ranks agree on before an update (see the class comment).
  struct Agreement {
    bool stop_signal = false;
    bool time_up = false;
    bool validate_by_time = false;
    bool checkpoint_due = false;
    double lr_factor = 1.0;  // The cooldown's, from rank 0's clock.
  };
  absl::StatusOr<Agreement> Agree(Agreement rank_zero_view, int64_t update);

  // The parts of Run.
  struct RunState;
  absl::Status CheckRunnable() const;
  // This rank's view of the clocks (time limit, validation and checkpoint
  // by time, the cooldown) before the next update.
  Agreement ClockView(const RunState& run) const;
  // Computes and applies the next update; false when it was found
  // non-finite and skipped (an error after too many in a row). Reading
  // once per log line, it is counted as applied until then.
  absl::StatusOr<bool> TrainOneUpdate(const Agreement& agreed, RunState& run);
  // An update queued on the device, its figures not yet settled.
  struct PendingUpdate;
  // Counts `pending` (an update whose figures `gradients` have been read) as
  // applied or skipped, in order after the updates settled before it, and
  // reports it through the hooks and the log; false for a skip.
  absl::StatusOr<bool> Settle(const PendingUpdate& pending, const Gradients& gradients,
                              absl::Time end, RunState& run);
  // Reads the figures of every pending update with one wait and settles
  // them; whether the last of them was applied (true when none waited).
  absl::StatusOr<bool> ReadPending(RunState& run);
  // Validates when due; true for a new best.
  absl::StatusOr<bool> ValidateIfDue(const Agreement& agreed, RunState& run);
  // The figures of the updates whose sums are `stats`, run from `start` to
  // `end`, the last in epoch `epoch`.
  UpdateLog MakeLog(const RunState& run, const LossStats& stats, absl::Time start,
                    absl::Time end, double gnorm, int64_t epoch) const;
  // Reads the pending figures, then writes a checkpoint.
  absl::Status Save(RunState& run, bool best);
  // Rank 0 validates; every rank returns its figures.
  absl::StatusOr<ValidationLog> ValidateOnRankZero(const TrainProgress& progress);
  // Writes a checkpoint through the hook; fails on every rank if it failed
  // on one.
  absl::Status SaveEverywhere(const TrainProgress& progress, bool best);

  TrainableModel* model_;
  AdamOptimizer* optimizer_;
  BatchStream* batcher_;
  std::vector<Batch> valid_;
  TrainerOptions options_;
  TrainerHooks hooks_;
  std::vector<Parameter*> parameters_;
  LocalCommunicator single_process_;
  Communicator* communicator_;
  std::unique_ptr<GradientReducer> reducer_;  // With more than one rank.
  // The last QueueGradients' sum of the gradients' squares, on their
  // device, where ApplyUpdate's clipping reads it, and its loss (the sum of
  // its batches'), which with it decides whether the update is skipped.
  Tensor grad_sum_of_squares_;
  Tensor loss_guard_;
  // Dynamic loss scaling's state (scale 1 when off) as last read, mirrored
  // in the progress that Run is given; and the state itself, on the
  // parameters' device (with dynamic loss scaling).
  LossScaleState loss_scale_;
  LossScaleTensors device_loss_scale_;
};

}  // namespace tfm

#endif  // TFM_RUNTIME_TRAIN_TRAINER_H_
