// The training loop: token-budget batches accumulated into updates, Adam with
// the paper's schedule, skipping of non-finite updates, validation with early
// stopping, and the points where checkpoints are due. What a checkpoint
// holds and how it is written (core/train/checkpoint) and how progress is
// logged are hooks, so the loop reads as the algorithm it is.
//
// Exact resume: everything random or ordered is a pure function of
// TrainProgress (the batcher's position, the update and batch counters that
// key dropout), which a checkpoint saves beside the weights and the
// optimizer moments. Training 2N updates equals N, save, load, N more.
#ifndef TFM_CORE_TRAIN_TRAINER_H_
#define TFM_CORE_TRAIN_TRAINER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/config/task_config.pb.h"
#include "core/data/batch.h"
#include "core/data/token_batcher.h"
#include "core/train/adam_optimizer.h"
#include "core/train/trainable_model.h"

namespace tfm {

// Everything besides weights and optimizer moments that a resumed run needs.
struct TrainProgress {
  int64_t update = 0;         // Updates applied (skipped ones not counted).
  int64_t batches = 0;        // Batches consumed: the dropout counter.
  BatchPosition data;         // The first batch of the next update.
  int64_t skipped_updates = 0;
  int64_t consecutive_nonfinite = 0;
  double best_valid_loss = std::numeric_limits<double>::infinity();
  int64_t validations_without_improvement = 0;
  double train_seconds = 0;   // Wall time spent training in earlier runs.
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
};

struct ValidationLog {
  int64_t epoch = 0;
  int64_t update = 0;
  double loss = 0;  // Per target token.
  double nll = 0;
  double ppl = 0;
  bool best = false;  // A new best validation loss.
};

// Why Run returned.
enum class StopReason { kMaxUpdates, kTimeLimit, kEarlyStopping, kSignal };
const char* StopReasonName(StopReason reason);

struct TrainerHooks {
  // Writes a checkpoint of the model, optimizer and `progress` (required).
  std::function<absl::Status(const TrainProgress& progress, bool best)> save_checkpoint;
  std::function<void(const UpdateLog&)> on_update_log;
  std::function<void(const ValidationLog&)> on_validation;
  // Called after every update (progress bars, tests).
  std::function<void(const TrainProgress&)> on_update;
};

struct TrainerOptions {
  int64_t max_updates = 0;      // Stop after this many updates in total.
  absl::Duration time_limit = absl::InfiniteDuration();  // For this run.
  int update_freq = 1;
  double clip_norm = 0;
  int64_t log_every = 100;
  int64_t validate_every = 0;   // Updates; 0: never by count.
  absl::Duration validate_every_time = absl::ZeroDuration();
  int64_t checkpoint_every = 0;  // Updates; 0: never by count.
  absl::Duration checkpoint_every_time = absl::ZeroDuration();
  int patience = 0;
  int max_consecutive_nonfinite = 10;
  uint64_t seed = 1;

  static TrainerOptions FromConfig(const config::TrainConfig& train);
};

class Trainer {
 public:
  // None of the pointers is owned; all must outlive the trainer. `valid`
  // may be empty (no validation).
  Trainer(TrainableModel* model, AdamOptimizer* optimizer, TokenBatcher* batcher,
          std::vector<Batch> valid, TrainerOptions options, TrainerHooks hooks);

  // Trains from `progress` (a fresh TrainProgress or one restored from a
  // checkpoint, whose weights and moments are already loaded) until a stop
  // condition; writes a final checkpoint unless the run failed. Repeated
  // non-finite updates are an error naming the update, with no checkpoint
  // written after them.
  absl::StatusOr<StopReason> Run(TrainProgress* progress);

  // Validation loss over the whole validation set.
  absl::StatusOr<ValidationLog> Validate(const TrainProgress& progress);

 private:
  // Accumulates update_freq batches' gradients into the parameters.
  absl::StatusOr<LossStats> AccumulateGradients(TrainProgress* progress);
  absl::Status ZeroGradients();
  absl::Status ScaleGradients(double factor);

  TrainableModel* model_;
  AdamOptimizer* optimizer_;
  TokenBatcher* batcher_;
  std::vector<Batch> valid_;
  TrainerOptions options_;
  TrainerHooks hooks_;
  std::vector<Parameter*> parameters_;
};

}  // namespace tfm

#endif  // TFM_CORE_TRAIN_TRAINER_H_
