#include "runtime/train/training_job.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_directory.h"
#include "runtime/train/metrics_csv.h"
#include "runtime/train/training_testing.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  EXPECT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  return dir;
}

TaskContext ToyContext(const std::string& data_dir, const std::string& work_dir, int steps) {
  TaskContext context;
  config::TaskConfig& config = context.config.config;
  config.set_task("translation");
  *config.mutable_data() = testing::WriteToyCorpus(data_dir);
  config.mutable_model()->set_d_model(4);  // Only the schedule reads it.
  config::TrainConfig& train = *config.mutable_train();
  train.set_warmup_steps(4);
  train.set_lr_scale(2.0);
  train.set_max_steps(steps);
  train.set_log_every_steps(2);
  train.set_validate_every_steps(4);
  train.set_checkpoint_every_steps(3);
  train.set_checkpoint_every_minutes(0);
  train.set_average_last_checkpoints(2);
  train.set_keep_last_checkpoints(3);
  context.mode = TaskMode::kTrain;
  context.work_dir = work_dir;
  return context;
}

ModelFactory Bigram() {
  return [](const config::TaskConfig&,
            const Tokenizer& tokenizer) -> absl::StatusOr<std::unique_ptr<TrainableModel>> {
    return std::unique_ptr<TrainableModel>(
        new testing::BigramModel(tokenizer.vocab_size(), /*bos=*/2));
  };
}

// A validation score of the weights (so that exact resume covers it too),
// or `by_update`'s value at the update validated when it has one.
ValidationScorerFactory FakeBleu(std::map<int64_t, double> by_update = {}) {
  return [by_update](const config::TaskConfig&, TrainableModel& model,
                     const Tokenizer&) -> absl::StatusOr<ValidationScorer> {
    ValidationScorer scorer;
    scorer.name = "bleu";
    scorer.score = [&model, by_update](const TrainProgress& p) -> absl::StatusOr<double> {
      if (by_update.count(p.update)) return by_update.at(p.update);
      double sum = 0;
      for (float w : model.Parameters()[0]->value.ToVector<float>()) sum += w;
      return 50 + 50 * std::tanh(sum);
    };
    return scorer;
  };
}

absl::Status Train(TaskContext context, std::string* log = nullptr,
                   const ValidationScorerFactory& make_scorer = nullptr) {
  std::ostringstream out;
  context.log = &out;
  absl::Status status = RunTraining(context, Bigram(), make_scorer);
  if (log) *log = out.str();
  return status;
}

// The losses a metrics.csv recorded, by update (timing columns left out).
std::vector<std::vector<std::optional<double>>> Losses(const std::string& work_dir) {
  absl::StatusOr<MetricsTable> table = ReadMetricsCsv(work_dir + "/" + kMetricsCsv);
  EXPECT_TRUE(table.ok()) << table.status();
  std::vector<std::vector<std::optional<double>>> rows;
  for (const auto& row : table->rows) {
    std::vector<std::optional<double>> kept;
    for (const char* column :
         {"update", "loss", "nll", "lr", "gnorm", "valid_loss", "valid_bleu"}) {
      kept.push_back(row[table->ColumnIndex(column)]);
    }
    rows.push_back(kept);
  }
  return rows;
}

// Training 12 updates equals training 6, stopping (a new process would
// start from the files alone), and training to 12 again.
TEST(TrainingJobTest, ResumeFromTheWorkDirectoryIsExact) {
  const std::string data = FreshDir("job_data");
  const std::string straight = FreshDir("job_straight"), resumed = FreshDir("job_resumed");
  std::string log;
  ASSERT_TRUE(Train(ToyContext(data, straight, 12), &log, FakeBleu()).ok()) << log;
  EXPECT_NE(log.find("model: 1600 parameters"), std::string::npos) << log;  // 40 x 40.
  EXPECT_NE(log.find("checkpoint_best and patience by bleu"), std::string::npos) << log;
  ASSERT_TRUE(Train(ToyContext(data, resumed, 6), nullptr, FakeBleu()).ok());
  ASSERT_TRUE(Train(ToyContext(data, resumed, 12), &log, FakeBleu()).ok());
  EXPECT_NE(log.find("resuming from " + resumed + "/checkpoint_000000006 at update 6"),
            std::string::npos)
      << log;

  absl::StatusOr<Checkpoint> a = ReadCheckpoint(straight + "/checkpoint_000000012");
  absl::StatusOr<Checkpoint> b = ReadCheckpoint(resumed + "/checkpoint_000000012");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->model[0].second.ToVector<float>(), b->model[0].second.ToVector<float>());
  EXPECT_EQ(a->optimizer[1].second.ToVector<float>(), b->optimizer[1].second.ToVector<float>());
  EXPECT_EQ(a->state.batches(), b->state.batches());
  EXPECT_EQ(a->state.best_valid_score(), b->state.best_valid_score());
  EXPECT_EQ(Losses(straight), Losses(resumed));
  EXPECT_TRUE(Losses(straight).back().back().has_value());  // valid_bleu at update 12.
  // Kept: the last 3 by update (and checkpoint_best beside them).
  absl::StatusOr<std::vector<CheckpointEntry>> kept = ListCheckpoints(straight);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_EQ(kept->back().update, 12);
  EXPECT_TRUE(ReadCheckpoint(straight + "/" + kBestCheckpoint).ok());
}

// The same with the preprocessed corpus: `preprocess` writes it, training
// reads it (globally shuffled, batches built on the background thread) and
// resumes inside an epoch exactly.
TEST(TrainingJobTest, ResumeFromAPreprocessedCorpusIsExact) {
  const std::string data = FreshDir("binary_data");
  const std::string straight = FreshDir("binary_straight"), resumed = FreshDir("binary_resumed");
  auto context = [&](const std::string& work_dir, int steps, TaskMode mode) {
    TaskContext c = ToyContext(data, work_dir, steps);
    // Windows of 10 of the 60 pairs (about 4 batches each): a resume at
    // update 6 lands in the second.
    c.config.config.mutable_data()->mutable_batching()->set_shuffle_buffer(10);
    c.mode = mode;
    return c;
  };
  for (const std::string& dir : {straight, resumed}) {
    std::ostringstream out;
    TaskContext preprocess = context(dir, 0, TaskMode::kPreprocess);
    preprocess.log = &out;
    ASSERT_TRUE(RunTrainingCommand(preprocess, Bigram()).ok()) << out.str();
    EXPECT_NE(out.str().find("preprocess: 60 pairs"), std::string::npos) << out.str();
  }
  std::string log;
  ASSERT_TRUE(Train(context(straight, 12, TaskMode::kTrain), &log, FakeBleu()).ok()) << log;
  EXPECT_NE(log.find("data: " + straight + "/train_corpus.bin (60 pairs"), std::string::npos)
      << log;
  ASSERT_TRUE(Train(context(resumed, 6, TaskMode::kTrain), nullptr, FakeBleu()).ok());
  absl::StatusOr<Checkpoint> stopped = ReadCheckpoint(resumed + "/checkpoint_000000006");
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_GT(stopped->state.data_position().pairs(), 0);  // Mid-epoch, past the first window.
  ASSERT_TRUE(Train(context(resumed, 12, TaskMode::kTrain), &log, FakeBleu()).ok());
  EXPECT_NE(log.find("resuming from " + resumed + "/checkpoint_000000006 at update 6"),
            std::string::npos)
      << log;
  absl::StatusOr<Checkpoint> a = ReadCheckpoint(straight + "/checkpoint_000000012");
  absl::StatusOr<Checkpoint> b = ReadCheckpoint(resumed + "/checkpoint_000000012");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->model[0].second.ToVector<float>(), b->model[0].second.ToVector<float>());
  EXPECT_EQ(Losses(straight), Losses(resumed));
}

TEST(TrainingJobTest, AverageAndPlotCommands) {
  const std::string data = FreshDir("avg_data"), work = FreshDir("avg_work");
  ASSERT_TRUE(Train(ToyContext(data, work, 9)).ok());
  TaskContext average = ToyContext(data, work, 9);
  average.mode = TaskMode::kAverage;
  std::ostringstream out;
  average.log = &out;
  ASSERT_TRUE(RunTrainingCommand(average, Bigram()).ok()) << out.str();
  absl::StatusOr<Checkpoint> mean =
      ReadCheckpoint(work + "/checkpoint_average", CheckpointParts::kDecoding);
  // Checkpoints every 3 updates and at each new best validation (4, 8): the
  // last two are 8 and 9.
  absl::StatusOr<Checkpoint> c6 = ReadCheckpoint(work + "/checkpoint_000000008");
  absl::StatusOr<Checkpoint> c9 = ReadCheckpoint(work + "/checkpoint_000000009");
  ASSERT_TRUE(mean.ok() && c6.ok() && c9.ok()) << mean.status() << c6.status() << c9.status();
  const std::vector<float> m = mean->model[0].second.ToVector<float>();
  const std::vector<float> x = c6->model[0].second.ToVector<float>();
  const std::vector<float> y = c9->model[0].second.ToVector<float>();
  for (size_t i = 0; i < m.size(); ++i) ASSERT_FLOAT_EQ(m[i], (x[i] + y[i]) / 2) << i;

  TaskContext plot = average;
  plot.mode = TaskMode::kPlot;
  ASSERT_TRUE(RunTrainingCommand(plot, Bigram()).ok());
  std::ifstream svg(work + "/" + kMetricsSvg);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
}

// A task's files, made once from the config, are in every checkpoint the
// run writes (the best too) and in their average.
TEST(TrainingJobTest, TaskFilesGoInEveryCheckpoint) {
  const std::string data = FreshDir("files_data"), work = FreshDir("files_work");
  TaskContext context = ToyContext(data, work, 9);
  std::ostringstream out;
  context.log = &out;
  int made = 0;
  const TaskFilesFactory make_files = [&made](const config::TaskConfig& config)
      -> absl::StatusOr<TaskFiles> {
    ++made;
    return TaskFiles{{"task_steps.txt", absl::StrCat(config.train().max_steps())}};
  };
  ASSERT_TRUE(RunTraining(context, Bigram(), FakeBleu(), make_files).ok()) << out.str();
  EXPECT_EQ(made, 1);
  context.mode = TaskMode::kAverage;
  ASSERT_TRUE(RunTrainingCommand(context, Bigram()).ok()) << out.str();
  absl::StatusOr<std::vector<CheckpointEntry>> kept = ListCheckpoints(work);
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::vector<std::string> dirs = {work + "/" + kBestCheckpoint, work + "/checkpoint_average"};
  for (const CheckpointEntry& entry : *kept) dirs.push_back(entry.path);
  for (const std::string& dir : dirs) {
    absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(dir, CheckpointParts::kDecoding);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    EXPECT_EQ(checkpoint->task_files, (TaskFiles{{"task_steps.txt", "9"}})) << dir;
  }

  // A factory's error stops the run before it trains, saying why.
  const std::string failed = FreshDir("files_failed");
  TaskContext failing = ToyContext(data, failed, 3);
  failing.log = &out;
  const absl::Status status = RunTraining(
      failing, Bigram(), nullptr,
      [](const config::TaskConfig&) -> absl::StatusOr<TaskFiles> {
        return absl::NotFoundError("no treebank");
      });
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_TRUE(ListCheckpoints(failed)->empty());
}

TEST(TrainingJobTest, ResumingWithAnotherModelOrVocabularyIsAnErrorNamingTheCheckpoint) {
  const std::string data = FreshDir("mismatch_data"), work = FreshDir("mismatch_work");
  ASSERT_TRUE(Train(ToyContext(data, work, 3)).ok());
  const std::string checkpoint = work + "/checkpoint_000000003";

  TaskContext other_model = ToyContext(data, work, 6);
  other_model.config.config.mutable_model()->set_d_ff(4096);
  absl::Status status = Train(other_model);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(checkpoint), std::string::npos) << status;
  EXPECT_NE(status.message().find("d_ff"), std::string::npos) << status;

  // A different tokenizer file in the work directory than the checkpoint's.
  const std::string other_data = FreshDir("mismatch_other_data");
  TaskContext other_vocab = ToyContext(other_data, FreshDir("mismatch_other_work"), 1);
  other_vocab.config.config.mutable_data()->mutable_tokenizer()->set_vocab_size(30);
  const absl::Status other_status = Train(other_vocab);
  ASSERT_TRUE(other_status.ok()) << other_status;
  ASSERT_EQ(system(("cp " + other_vocab.work_dir + "/spm.model " + work + "/spm.model").c_str()),
            0);
  status = Train(ToyContext(data, work, 6));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("spm.model"), std::string::npos) << status;
  EXPECT_NE(status.message().find(checkpoint), std::string::npos) << status;
}

TEST(TrainingJobTest, CorruptOrTruncatedCheckpointIsAnErrorNamingTheFile) {
  const std::string data = FreshDir("corrupt_data"), work = FreshDir("corrupt_work");
  ASSERT_TRUE(Train(ToyContext(data, work, 3)).ok());
  const std::string model = work + "/checkpoint_000000003/model.safetensors";
  {
    std::fstream file(model, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-5, std::ios::end);
    file.put('\x7f');
  }
  absl::Status status = Train(ToyContext(data, work, 6));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(model), std::string::npos) << status;
  ASSERT_EQ(truncate(model.c_str(), 100), 0);
  status = Train(ToyContext(data, work, 6));
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(model), std::string::npos) << status;
}

// A binary corpus named in the config but not there is an error naming the
// setting, not a run that quietly reads the text instead.
TEST(TrainingJobTest, ANamedBinaryCorpusThatIsMissingIsAnError) {
  const std::string data = FreshDir("named_binary_data"), work = FreshDir("named_binary_work");
  TaskContext context = ToyContext(data, work, 3);
  context.config.config.mutable_data()->set_binary_train_path(data + "/nowhere.bin");
  const absl::Status status = Train(context);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_NE(status.message().find("data.binary_train_path: " + data + "/nowhere.bin not found"),
            std::string::npos)
      << status;
}

// checkpoint_best is the best by BLEU, whose value the checkpoint keeps: a
// resumed run's lower score is no new best though it is its first.
TEST(TrainingJobTest, BestCheckpointByBleuSurvivesResume) {
  const std::string data = FreshDir("bleu_data"), work = FreshDir("bleu_work");
  const ValidationScorerFactory bleu = FakeBleu({{4, 10}, {8, 30}, {12, 20}, {16, 25}});
  std::string log;
  ASSERT_TRUE(Train(ToyContext(data, work, 12), &log, bleu).ok()) << log;
  std::vector<double> scores;
  for (const auto& row : Losses(work)) {
    if (row.back().has_value()) scores.push_back(*row.back());
  }
  EXPECT_EQ(scores, (std::vector<double>{10, 30, 20}));
  std::string events;  // TensorBoard's tags, as the records hold them.
  for (const auto& entry : std::filesystem::directory_iterator(work + "/" + kTensorBoardDir)) {
    std::ifstream file(entry.path(), std::ios::binary);
    events.append(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  }
  EXPECT_NE(events.find("valid/bleu"), std::string::npos);
  EXPECT_NE(events.find("valid/loss"), std::string::npos);
  absl::StatusOr<Checkpoint> best = ReadCheckpoint(work + "/" + kBestCheckpoint);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_EQ(best->state.update(), 8);
  EXPECT_EQ(best->state.best_valid_score(), 30);

  ASSERT_TRUE(Train(ToyContext(data, work, 16), &log, bleu).ok()) << log;
  EXPECT_NE(log.find("resuming from " + work + "/checkpoint_000000012"), std::string::npos) << log;
  EXPECT_EQ(ReadCheckpoint(work + "/" + kBestCheckpoint)->state.update(), 8);
  absl::StatusOr<Checkpoint> last = ReadCheckpoint(work + "/checkpoint_000000016");
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->state.best_valid_score(), 30);
  EXPECT_EQ(last->state.validations_without_improvement(), 2);

  // The loss instead, by choice; a metric the run does not compute is an error.
  TaskContext by_loss = ToyContext(data, FreshDir("bleu_by_loss"), 4);
  by_loss.config.config.mutable_train()->set_best_checkpoint_metric("loss");
  ASSERT_TRUE(Train(by_loss, &log, bleu).ok()) << log;
  EXPECT_NE(log.find("checkpoint_best and patience by loss"), std::string::npos) << log;
  TaskContext unscored = ToyContext(data, FreshDir("bleu_unscored"), 4);
  unscored.config.config.mutable_train()->set_best_checkpoint_metric("bleu");
  const absl::Status status = Train(unscored);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("best_checkpoint_metric"), std::string::npos) << status;
}

// train.keep_best_checkpoints: every validation writes a checkpoint that
// records it, pruning keeps the best besides the last, and `average
// --best=N` averages those (the peak of a run that then overfits).
TEST(TrainingJobTest, BestValidatedCheckpointsAreKeptAndAveraged) {
  const std::string data = FreshDir("keep_best_data"), work = FreshDir("keep_best_work");
  // Validations every 4 updates; BLEU peaks at 8 and 12.
  const ValidationScorerFactory bleu =
      FakeBleu({{4, 10}, {8, 35}, {12, 30}, {16, 20}, {20, 25}, {24, 15}});
  TaskContext context = ToyContext(data, work, 24);
  context.config.config.mutable_train()->set_keep_best_checkpoints(2);
  std::string log;
  ASSERT_TRUE(Train(context, &log, bleu).ok()) << log;
  // Checkpoints 3 updates after the last save and at each validation (3, 4,
  // 7, 8, 11, 12, ... 20, 23, 24); kept: the last 3 (20, 23, 24) and the 2
  // best validated among the others (8, 12).
  const std::vector<CheckpointEntry> entries = ListCheckpoints(work).value();
  std::vector<int64_t> kept;
  for (const CheckpointEntry& entry : entries) kept.push_back(entry.update);
  EXPECT_EQ(kept, (std::vector<int64_t>{8, 12, 20, 23, 24}));
  absl::StatusOr<Checkpoint> c8 = ReadCheckpoint(work + "/checkpoint_000000008");
  absl::StatusOr<Checkpoint> c12 = ReadCheckpoint(work + "/checkpoint_000000012");
  absl::StatusOr<Checkpoint> c23 = ReadCheckpoint(work + "/checkpoint_000000023");
  ASSERT_TRUE(c8.ok() && c12.ok() && c23.ok()) << c8.status() << c12.status() << c23.status();
  EXPECT_EQ(c8->state.valid_score(), 35);
  EXPECT_TRUE(c8->state.ranked_by_score());
  EXPECT_TRUE(c8->state.has_valid_loss());
  EXPECT_FALSE(c23->state.has_valid_loss());  // No validation at update 23.

  TaskContext average = ToyContext(data, work, 24);
  average.mode = TaskMode::kAverage;
  average.average_best = 2;
  std::ostringstream out;
  average.log = &out;
  ASSERT_TRUE(RunTrainingCommand(average, Bigram()).ok()) << out.str();
  EXPECT_NE(out.str().find("averaged 2 checkpoints best by validation (updates 8, 12)"),
            std::string::npos)
      << out.str();
  absl::StatusOr<Checkpoint> mean =
      ReadCheckpoint(work + "/checkpoint_average_best", CheckpointParts::kDecoding);
  ASSERT_TRUE(mean.ok()) << mean.status();
  const std::vector<float> m = mean->model[0].second.ToVector<float>();
  const std::vector<float> x = c8->model[0].second.ToVector<float>();
  const std::vector<float> y = c12->model[0].second.ToVector<float>();
  for (size_t i = 0; i < m.size(); ++i) ASSERT_FLOAT_EQ(m[i], (x[i] + y[i]) / 2) << i;

  // Of the 5 kept, 23 recorded no validation: 5 best cannot be chosen.
  average.average_best = 5;
  const absl::Status too_many = RunTrainingCommand(average, Bigram());
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument) << too_many;
  EXPECT_NE(too_many.message().find("4 of the 5"), std::string::npos) << too_many;

  // Without keep_best_checkpoints the last 3 alone remain: the peak is gone.
  const std::string plain = FreshDir("keep_best_plain");
  ASSERT_TRUE(Train(ToyContext(data, plain, 24), &log, bleu).ok()) << log;
  std::vector<int64_t> plain_kept;
  const std::vector<CheckpointEntry> plain_entries = ListCheckpoints(plain).value();
  for (const CheckpointEntry& entry : plain_entries) plain_kept.push_back(entry.update);
  EXPECT_EQ(plain_kept, (std::vector<int64_t>{20, 23, 24}));
}

}  // namespace
}  // namespace tfm
