#include "runtime/train/training_job.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "core/config/device_setting.h"
#include "core/cuda/runtime.h"
#include "core/data/file_io.h"
#include "core/paths.h"
#include "runtime/distributed/broadcast.h"
#include "runtime/distributed/launch.h"
#include "runtime/distributed/nccl_communicator.h"
#include "runtime/distributed/rank_device.h"
#include "core/environment_report.h"
#include "core/deterministic.h"
#include "core/status_macros.h"
#include "ops/matmul/gemm_bf16_cpu.h"
#include "runtime/train/adam_optimizer.h"
#include "runtime/train/binary_training_corpus.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_average.h"
#include "runtime/train/checkpoint_directory.h"
#include "runtime/train/checkpoint_match.h"
#include "runtime/train/metrics_csv.h"
#include "runtime/train/plot_svg.h"
#include "runtime/train/progress_reporter.h"
#include "runtime/train/stop_signal.h"
#include "runtime/train/work_dir_lock.h"
#include "runtime/train/tensorboard_writer.h"
#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_metrics.h"

namespace tfm {
namespace {

train::TrainingState ToState(const TrainProgress& p, uint64_t seed) {
  train::TrainingState state;
  state.set_update(p.update);
  state.set_epoch(p.data.epoch);
  state.mutable_data_position()->set_epoch(p.data.epoch);
  state.mutable_data_position()->set_pairs(p.data.pairs);
  state.mutable_data_position()->set_batch(p.data.batch);
  state.mutable_rng()->set_seed(seed);
  state.mutable_rng()->set_offset(p.batches);
  state.set_elapsed_seconds(p.train_seconds);
  state.set_batches(p.batches);
  state.set_skipped_updates(p.skipped_updates);
  state.set_consecutive_nonfinite(p.consecutive_nonfinite);
  state.set_best_valid_loss(p.best_valid_loss);
  state.set_best_valid_score(p.best_valid_score);
  state.set_validations_without_improvement(p.validations_without_improvement);
  if (p.loss_scale.has_value()) {
    state.set_loss_scale(p.loss_scale->scale);
    state.set_loss_scale_clean_updates(p.loss_scale->clean_updates);
  }
  if (p.last_validation.has_value() && p.last_validation->update == p.update) {
    state.set_valid_loss(p.last_validation->loss);
    if (p.last_validation->score.has_value()) state.set_valid_score(*p.last_validation->score);
    state.set_ranked_by_score(p.last_validation->ranked_by_score);
  }
  return state;
}

TrainProgress FromState(const train::TrainingState& state) {
  TrainProgress p;
  p.update = state.update();
  p.batches = state.batches();
  p.data.epoch = state.data_position().epoch();
  p.data.pairs = state.data_position().pairs();
  p.data.batch = state.data_position().batch();
  p.skipped_updates = state.skipped_updates();
  p.consecutive_nonfinite = state.consecutive_nonfinite();
  if (state.has_best_valid_loss()) p.best_valid_loss = state.best_valid_loss();
  if (state.has_best_valid_score()) p.best_valid_score = state.best_valid_score();
  p.validations_without_improvement = state.validations_without_improvement();
  p.train_seconds = state.elapsed_seconds();
  if (state.has_loss_scale()) {
    p.loss_scale = LossScaleState{state.loss_scale(), state.loss_scale_clean_updates()};
  }
  return p;
}

TrainingMetrics ToMetrics(const UpdateLog& log) {
  TrainingMetrics m;
  m.epoch = log.epoch;
  m.update = log.update;
  m.loss = log.loss;
  m.nll = log.nll;
  m.learning_rate = log.lr;
  m.gradient_norm = log.gnorm;
  m.source_tokens_per_second = log.source_tokens_per_second;
  m.target_tokens_per_second = log.target_tokens_per_second;
  m.elapsed_seconds = log.elapsed_seconds;
  m.loss_scale = log.loss_scale;
  return m;
}

int KeepLast(const config::TrainConfig& train) {
  return train.keep_last_checkpoints() > 0
             ? std::max(train.keep_last_checkpoints(), train.average_last_checkpoints())
             : std::max(1, train.average_last_checkpoints());
}

// The checkpoint a run resumes from, if the work directory has one: its
// description; the weights and moments are read from its files into the
// model and optimizer (RestoreOnEveryRank), one tensor at a time.
struct Resume {
  Checkpoint checkpoint;
  std::string path;
};

// A quantized model directory given as --workdir: training or averaging
// there would write f32 checkpoints beside (and mistake for) its int8 files.
absl::Status CheckNotQuantizedModelDir(const std::string& work_dir, absl::string_view what) {
  struct stat info;
  if (stat(JoinPath(work_dir, kManifestFile).c_str(), &info) != 0) return absl::OkStatus();
  absl::StatusOr<train::Manifest> manifest = VerifyCheckpoint(work_dir);
  if (!manifest.ok()) return absl::OkStatus();  // Not a checkpoint of ours: as before.
  return CheckNotQuantized(work_dir, manifest->quantization(), what);
}

absl::StatusOr<std::optional<Resume>> FindResume(const std::string& work_dir,
                                                 const config::TaskConfig& config) {
  TFM_RETURN_IF_ERROR(CheckNotQuantizedModelDir(work_dir, "train (as --workdir)"));
  absl::StatusOr<CheckpointEntry> latest = LatestCheckpoint(work_dir);
  if (absl::IsNotFound(latest.status())) return std::optional<Resume>();
  TFM_RETURN_IF_ERROR(latest.status());
  TFM_ASSIGN_OR_RETURN(const config::TaskConfig saved, ReadCheckpointConfig(latest->path));
  TFM_RETURN_IF_ERROR(CheckConfigMatches(saved, latest->path, config));
  Resume resume;
  resume.path = latest->path;
  TFM_ASSIGN_OR_RETURN(resume.checkpoint,
                       ReadCheckpoint(latest->path, CheckpointParts::kDescription));
  TFM_RETURN_IF_ERROR(
      CheckNotQuantized(latest->path, resume.checkpoint.quantization, "resume training"));
  return std::optional<Resume>(std::move(resume));
}

// TensorBoard groups by the tag's prefix: valid/loss beside train/loss, not
// valid/valid_loss.
MetricRow TensorBoardValidationRow(MetricRow row) {
  for (auto& [name, value] : row) {
    if (absl::StartsWith(name, "valid_")) name = name.substr(6);
  }
  return row;
}

}  // namespace

namespace {

// What rank 0 finds in the work directory: the checkpoint a run resumes
// from, and the vocabulary (the checkpoint's, else the work directory's
// tokenizer, trained first if there is none).
struct StartingPoint {
  std::optional<Resume> resume;
  std::string vocabulary;
};

absl::StatusOr<StartingPoint> FindStartingPoint(const config::TaskConfig& config,
                                                const std::string& work_dir, std::ostream& log) {
  StartingPoint start;
  TFM_ASSIGN_OR_RETURN(start.resume, FindResume(work_dir, config));
  const std::string tokenizer_path = JoinPath(work_dir, config.data().tokenizer().model_path());
  if (!start.resume) {
    TFM_ASSIGN_OR_RETURN(Tokenizer tokenizer,
                         LoadOrTrainTokenizer(config.data(), work_dir, &log));
    start.vocabulary = tokenizer.model();
    return start;
  }
  // The checkpoint's vocabulary is the one its weights were trained with;
  // a different tokenizer file in the work directory is an error, not a
  // silent switch.
  struct stat info;
  if (stat(tokenizer_path.c_str(), &info) == 0) {
    TFM_ASSIGN_OR_RETURN(Tokenizer on_disk, Tokenizer::Load(tokenizer_path));
    TFM_RETURN_IF_ERROR(CheckVocabularyMatches(start.resume->checkpoint.vocabulary,
                                               start.resume->path, on_disk.model(),
                                               tokenizer_path));
  }
  start.vocabulary = start.resume->checkpoint.vocabulary;
  return start;
}

// Loads rank 0's checkpoint (if it resumes) into `weights` and `moments`
// (the model's and optimizer's tensors) and hands them, with the progress,
// to the other ranks.
absl::StatusOr<TrainProgress> RestoreOnEveryRank(const std::optional<Resume>& resume,
                                                 const config::TrainConfig& train,
                                                 Communicator& communicator, std::ostream& log,
                                                 NamedTensors* weights, NamedTensors* moments) {
  TrainProgress progress;
  if (resume) {
    TFM_ASSIGN_OR_RETURN(const StoredTensors model,
                         StoredTensors::OpenFile(JoinPath(resume->path, kModelFile)));
    TFM_RETURN_IF_ERROR(AssignTensors(model, weights));
    const std::string optimizer_path = JoinPath(resume->path, kOptimizerFile);
    // Averaged checkpoints have none, and cannot resume.
    if (resume->checkpoint.has_optimizer) {
      TFM_ASSIGN_OR_RETURN(const StoredTensors optimizer, StoredTensors::OpenFile(optimizer_path));
      TFM_RETURN_IF_ERROR(AssignTensors(optimizer, moments));
    } else {
      // As an empty file would: every moment is named missing.
      TFM_RETURN_IF_ERROR(AssignTensors(NamedTensors{}, optimizer_path, moments));
    }
    progress = FromState(resume->checkpoint.state);
    log << "resuming from " << resume->path << " at update " << progress.update << "\n";
  }
  if (communicator.size() == 1) return progress;
  const absl::Duration timeout = absl::Seconds(train.distributed_timeout_seconds());
  std::string state = ToState(progress, train.seed()).SerializeAsString();
  TFM_RETURN_IF_ERROR(BroadcastString(communicator, 0, "the training state", timeout, &state));
  train::TrainingState parsed;
  if (!parsed.ParseFromString(state)) {
    return absl::DataLossError("the training state broadcast by rank 0 does not parse");
  }
  std::vector<Tensor> tensors;
  for (const NamedTensors* named : {weights, moments}) {
    for (const auto& [name, tensor] : *named) tensors.push_back(tensor);
  }
  TFM_RETURN_IF_ERROR(
      BroadcastTensors(communicator, 0, "the weights and moments", timeout, tensors));
  return FromState(parsed);
}

// What rank 0 writes while a run goes on: the console bar, metrics.csv,
// TensorBoard and the checkpoints. The hooks it makes refer to it and to
// everything passed to Open, which must outlive the run.
class RankZeroOutputs {
 public:
  struct Run {
    const config::TaskConfig* config;
    const std::string* work_dir;
    TrainableModel* model;
    const AdamOptimizer* optimizer;
    const Tokenizer* tokenizer;
    const TaskFiles* task_files;
    TrainerOptions options;
    std::string score_name;  // Empty without a validation score.
  };

  // Opens the logs (appending after update `first_update` on a resume).
  absl::Status Open(Run run, int64_t first_update) {
    run_ = std::move(run);
    const std::string& work_dir = *run_.work_dir;
    TFM_ASSIGN_OR_RETURN(MetricsCsvWriter csv,
                         MetricsCsvWriter::Open(JoinPath(work_dir, kMetricsCsv),
                                                MetricColumns(run_.score_name), first_update));
    csv_.emplace(std::move(csv));
    TFM_ASSIGN_OR_RETURN(TensorBoardWriter tensorboard,
                         TensorBoardWriter::Create(JoinPath(work_dir, kTensorBoardDir)));
    tensorboard_.emplace(std::move(tensorboard));
    reporter_.emplace(ProgressReporter::ForStderr(
        run_.options.max_updates, std::max<int64_t>(1, run_.options.log_every)));
    return absl::OkStatus();
  }

  void SetHooks(TrainerHooks* hooks) {
    hooks->on_update_queued = [this](const TrainProgress& p, double elapsed_seconds) {
      // Log updates get the window's averages below; the others only move
      // the bar (their figures are read at the next log line).
      const int64_t every = run_.options.log_every;
      if (every <= 0 || p.update % every != 0) reporter_->Advance(p.update, elapsed_seconds);
    };
    hooks->on_update_log = [this](const UpdateLog& window) {
      const TrainingMetrics metrics = ToMetrics(window);
      reporter_->Update(metrics);
      log_status_.Update(csv_->Append(ToRow(metrics)));
      log_status_.Update(tensorboard_->AddScalars(metrics.update, ToRow(metrics), "train/"));
    };
    hooks->on_validation = [this](const ValidationLog& v) { OnValidation(v); };
    hooks->save_checkpoint = [this](const TrainProgress& p, bool best) {
      return SaveCheckpoint(p, best);
    };
  }

  // The first failure to write a log, which ends the run.
  const absl::Status& log_status() const { return log_status_; }
  void Finish() {
    if (reporter_) reporter_->Finish();
  }

 private:
  void OnValidation(const ValidationLog& v) {
    ValidationMetrics metrics;
    metrics.epoch = v.epoch;
    metrics.update = v.update;
    metrics.loss = v.loss;
    metrics.nll = v.nll;
    metrics.elapsed_seconds = v.elapsed_seconds;
    metrics.score_name = run_.score_name;
    metrics.score = v.score;
    reporter_->Message(FormatValidationLine(metrics) + (v.best ? " | best" : ""));
    log_status_.Update(csv_->Append(ToRow(metrics)));
    log_status_.Update(tensorboard_->AddScalars(
        metrics.update, TensorBoardValidationRow(ToRow(metrics)), "valid/"));
  }

  absl::Status SaveCheckpoint(const TrainProgress& p, bool best) {
    TFM_RETURN_IF_ERROR(log_status_);
    const std::string& work_dir = *run_.work_dir;
    const config::TaskConfig& config = *run_.config;
    Checkpoint checkpoint;
    checkpoint.model = ParameterTensors(*run_.model);
    checkpoint.optimizer = run_.optimizer->State();
    checkpoint.state = ToState(p, config.train().seed());
    checkpoint.config = config;
    checkpoint.vocabulary = run_.tokenizer->model();
    checkpoint.task_files = *run_.task_files;
    TFM_ASSIGN_OR_RETURN(const std::string path, WriteCheckpoint(work_dir, checkpoint));
    if (best) {
      TFM_RETURN_IF_ERROR(WriteCheckpointTo(JoinPath(work_dir, kBestCheckpoint), checkpoint));
    }
    TFM_RETURN_IF_ERROR(PruneCheckpoints(work_dir, KeepLast(config.train()),
                                         config.train().keep_best_checkpoints()));
    reporter_->Message(absl::StrCat("checkpoint ", path, best ? " (best)" : ""));
    return absl::OkStatus();
  }

  Run run_{};
  std::optional<MetricsCsvWriter> csv_;
  std::optional<TensorBoardWriter> tensorboard_;
  std::optional<ProgressReporter> reporter_;
  absl::Status log_status_;
};

// One rank's part of RunTraining. Rank 0 alone touches the work directory
// (checkpoints, vocabulary, logs) and hands the others what they need from
// it (the vocabulary, the weights, moments and progress it resumes from), so
// the ranks need no shared file system.
absl::Status TrainOnRank(const TaskContext& context, const ModelFactory& make_model,
                         const ValidationScorerFactory& make_scorer,
                         const TaskFilesFactory& make_task_files, Communicator& communicator) {
  const config::TaskConfig& config = context.config.config;
  const std::string& work_dir = context.work_dir;
  const bool rank_zero = communicator.rank() == 0;
  std::ostream discard(nullptr);
  std::ostream& log =
      !rank_zero ? discard : context.log != nullptr ? *context.log : std::cout;
  // Before anything is written: a GPU that is not here fails the run at once.
  TFM_ASSIGN_OR_RETURN(const Device device,
                       ChooseRankDevice(config.train().device(), communicator.size(),
                                        LocalRank(communicator.rank()), cuda::DeviceCount()));
  // Held until this run ends: a second run on the directory is refused.
  std::optional<WorkDirLock> work_dir_lock;
  if (rank_zero) {
    TFM_RETURN_IF_ERROR(MakeDirectories(work_dir));
    TFM_ASSIGN_OR_RETURN(WorkDirLock lock, WorkDirLock::Acquire(work_dir));
    work_dir_lock.emplace(std::move(lock));
  }
  for (const auto& [label, text] : EnvironmentReport()) log << label << ": " << text << "\n";
  log << "device: " << DescribeDevice(device, "train.device", config.train().device()) << "\n";
  if (device.is_cpu() && config.train().dtype() == "bf16") {
    const std::string kernel = Bf16ProductKernelName();
    log << "products: bf16 inputs summed in f32, f32 tensors (train.dtype bf16 on the CPU), "
        << "kernel " << kernel
        << (kernel == "amx_bf16" ? "\n"
                                 : " (no AMX-BF16 here: as exact as on AMX, but slower than f32)\n");
  }
  // Process-wide: every op call of this run (and its validation) sees it.
  SetDeterministicKernels(config.train().deterministic());
  if (config.train().deterministic() && device.is_cuda()) {
    log << "kernels: deterministic (train.deterministic): fixed summation orders on the GPU\n";
  }
  if (communicator.size() > 1) {
    log << "ranks: " << communicator.size() << " (" << communicator.name() << "), each taking "
        << "its share of the " << config.train().update_freq() << " batches of an update\n";
  }
  // Ranks on GPUs sum their gradients over NCCL, bootstrapped by the MPI
  // ranks (which still carry the host collectives: the agreed flags, the
  // loss sums, rank 0's validation figures).
  std::unique_ptr<NcclCommunicator> nccl;
  Communicator* gradient_communicator = &communicator;
  if (device.is_cuda() && communicator.size() > 1) {
    TFM_ASSIGN_OR_RETURN(
        nccl, NcclCommunicator::Create(&communicator, device.index,
                                       absl::Seconds(config.train().distributed_timeout_seconds())));
    gradient_communicator = nccl.get();
    log << "gradients: summed on the GPUs over " << nccl->name() << "\n";
  }

  StartingPoint start;
  TaskFiles task_files;  // Rank 0's, which alone writes checkpoints.
  if (rank_zero && make_task_files) {
    TFM_ASSIGN_OR_RETURN(task_files, make_task_files(config));
  }
  if (rank_zero) {
    TFM_ASSIGN_OR_RETURN(start, FindStartingPoint(config, work_dir, log));
  }
  // No timeout: rank 0 may first train the vocabulary for a long time (a
  // rank 0 that dies meanwhile is reported by mpirun).
  TFM_RETURN_IF_ERROR(BroadcastString(communicator, 0, "the vocabulary",
                                      absl::InfiniteDuration(), &start.vocabulary));
  TFM_ASSIGN_OR_RETURN(Tokenizer tokenizer, Tokenizer::FromModel(start.vocabulary));

  // The model factory sees the device chosen here, never "auto".
  config::TaskConfig on_device = config;
  on_device.mutable_train()->set_device(device.ToString());
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<TrainableModel> model, make_model(on_device, tokenizer));
  int64_t parameter_count = 0;
  for (Parameter* p : model->Parameters()) parameter_count += p->value.num_elements();
  log << absl::StrFormat("model: %d parameters (%.1fM), vocabulary %d\n", parameter_count,
                         parameter_count / 1e6, tokenizer.vocab_size());

  TFM_ASSIGN_OR_RETURN(
      const InverseSqrtSchedule schedule,
      InverseSqrtSchedule::Create(config.model().d_model(), config.train().warmup_steps(),
                                  config.train().lr_scale()));
  TFM_ASSIGN_OR_RETURN(AdamOptimizer optimizer,
                       AdamOptimizer::Create(model->Parameters(), config.train().adam(), schedule));
  NamedTensors weights = ParameterTensors(*model);
  NamedTensors moments = optimizer.State();
  TFM_ASSIGN_OR_RETURN(TrainProgress progress,
                       RestoreOnEveryRank(start.resume, config.train(), communicator, log,
                                          &weights, &moments));
  start.resume.reset();  // The checkpoint's host copy is no longer needed.

  // Rank 0 decides whether the binary corpus is there, so that every rank
  // reads the same batches (each maps the same path: one machine or a
  // shared file system; a rank without it stops with its name).
  std::string binary_path;
  if (rank_zero) {
    const std::string path = BinaryTrainingCorpusPath(config.data(), work_dir);
    struct stat info;
    if (stat(path.c_str(), &info) == 0) {
      binary_path = path;
    } else if (config.data().has_binary_train_path()) {
      // Named on purpose: reading the text instead would hide a typo.
      return absl::NotFoundError(absl::StrCat(
          context.config.sources.Describe("data.binary_train_path"),
          ": data.binary_train_path: ", path,
          " not found (the preprocess command writes it; leave the setting out to train from "
          "data.train's text)"));
    }
  }
  TFM_RETURN_IF_ERROR(BroadcastString(communicator, 0, "the binary corpus path",
                                      absl::InfiniteDuration(), &binary_path));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<BatchStream> batcher,
                       OpenTrainingBatches(config.data(), tokenizer, binary_path, log));
  TFM_ASSIGN_OR_RETURN(std::vector<Batch> valid, LoadValidationBatches(config.data(), tokenizer));
  log << "data: " << valid.size() << " validation batches\n" << std::flush;
  ValidationScorer scorer;
  if (make_scorer && !valid.empty()) {
    TFM_ASSIGN_OR_RETURN(scorer, make_scorer(config, *model, tokenizer));
  }
  TrainerOptions options = TrainerOptions::FromConfig(config.train());
  TFM_ASSIGN_OR_RETURN(options.best_by_score, BestByScore(config.train(), scorer));
  if (!valid.empty()) {
    log << "validation: loss" << (scorer.score ? absl::StrCat(" and ", scorer.name) : "")
        << "; checkpoint_best and patience by "
        << (options.best_by_score ? scorer.name : std::string("loss")) << "\n";
  }

  // Rank 0's files and console; the other ranks' hooks do nothing.
  RankZeroOutputs outputs;
  TrainerHooks hooks;
  hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
  if (rank_zero) {
    TFM_RETURN_IF_ERROR(outputs.Open({&config, &work_dir, model.get(), &optimizer, &tokenizer,
                                      &task_files, options, scorer.score ? scorer.name : ""},
                                     progress.update));
    outputs.SetHooks(&hooks);
  }
  options.time_limit = context.time_limit;
  hooks.validation_score = std::move(scorer);
  Trainer trainer(model.get(), &optimizer, batcher.get(), std::move(valid), options,
                  std::move(hooks), gradient_communicator);
  InstallStopSignalHandlers();
  absl::StatusOr<StopReason> reason = trainer.Run(&progress);
  outputs.Finish();
  TFM_RETURN_IF_ERROR(reason.status());
  TFM_RETURN_IF_ERROR(outputs.log_status());
  log << "stopped at update " << progress.update << ": " << StopReasonName(*reason) << "\n";
  // Interrupted, the run is not finished: a script's `train && evaluate`
  // must not go on with it (the driver exits with 128 + the signal).
  const absl::Status interrupted =
      *reason == StopReason::kSignal
          ? absl::CancelledError(absl::StrCat(
                "training stopped by a signal at update ", progress.update,
                "; its checkpoint is in ", work_dir, ": run the same command to resume"))
          : absl::OkStatus();
  if (!rank_zero) return interrupted;
  // A run too short to log anything has nothing to plot; that is no error.
  const absl::Status plotted =
      WritePlotSvg(JoinPath(work_dir, kMetricsCsv), JoinPath(work_dir, kMetricsSvg));
  if (plotted.ok()) {
    log << "plot: " << JoinPath(work_dir, kMetricsSvg) << "\n";
  } else if (absl::IsFailedPrecondition(plotted)) {
    log << "plot: none (no update was logged; log_every_steps is "
        << config.train().log_every_steps() << ")\n";
  } else {
    log << "plot: " << plotted.ToString() << "\n";
  }
  return interrupted;
}

}  // namespace

absl::Status RunTraining(const TaskContext& context, const ModelFactory& make_model,
                         const ValidationScorerFactory& make_scorer,
                         const TaskFilesFactory& make_task_files) {
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> communicator,
                       ConnectRanks(absl::Seconds(
                           context.config.config.train().distributed_timeout_seconds())));
  const absl::Status status =
      TrainOnRank(context, make_model, make_scorer, make_task_files, *communicator);
  if (!status.ok() && communicator->size() > 1) {
    // The other ranks would wait for this one until their timeout: end
    // them all now, saying why first.
    std::fprintf(stderr, "rank %d: %s\n", communicator->rank(), status.ToString().c_str());
    std::fflush(stderr);
    communicator->Abort(1);
  }
  return status;
}

absl::Status RunAveraging(const TaskContext& context) {
  const config::TrainConfig& train = context.config.config.train();
  const int last =
      context.average_last > 0 ? context.average_last : train.average_last_checkpoints();
  TFM_RETURN_IF_ERROR(CheckNotQuantizedModelDir(context.work_dir, "average (as --workdir)"));
  const bool best = context.average_best > 0;
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                       best ? BestCheckpoints(context.work_dir, context.average_best)
                            : LastCheckpoints(context.work_dir, last));
  std::vector<std::string> paths;
  std::vector<std::string> updates;
  for (const CheckpointEntry& entry : entries) {
    paths.push_back(entry.path);
    updates.push_back(absl::StrCat(entry.update));
  }
  const std::string out =
      JoinPath(context.work_dir, best ? kAverageBestCheckpoint : kAverageCheckpoint);
  TFM_RETURN_IF_ERROR(AverageCheckpoints(paths, out));
  if (context.log) {
    // The best ones need not be consecutive: each update is named.
    *context.log << "averaged " << paths.size()
                 << (best ? absl::StrCat(" checkpoints best by validation (updates ",
                                         absl::StrJoin(updates, ", "))
                          : absl::StrCat(" checkpoints (updates ", updates.front(), "..",
                                         updates.back()))
                 << ") into " << out << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunPlot(const TaskContext& context) {
  const std::string svg = JoinPath(context.work_dir, kMetricsSvg);
  TFM_RETURN_IF_ERROR(WritePlotSvg(JoinPath(context.work_dir, kMetricsCsv), svg));
  if (context.log) *context.log << "wrote " << svg << "\n";
  return absl::OkStatus();
}

absl::Status RunTrainingCommand(const TaskContext& context, const ModelFactory& make_model,
                                const ValidationScorerFactory& make_scorer,
                                const TaskFilesFactory& make_task_files) {
  switch (context.mode) {
    case TaskMode::kTrain:
      return RunTraining(context, make_model, make_scorer, make_task_files);
    case TaskMode::kPreprocess:
      return RunPreprocess(context);
    case TaskMode::kAverage:
      return RunAveraging(context);
    case TaskMode::kPlot:
      return RunPlot(context);
    default:
      return absl::InvalidArgumentError("not a training command");
  }
}

}  // namespace tfm
