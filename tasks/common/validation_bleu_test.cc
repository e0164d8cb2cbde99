// Validation BLEU on a small random Transformer: a finite score in [0, 100],
// and training with the score equals training without it (same weights,
// data position and dropout counter), so exact resume still holds.
#include "tasks/common/validation_bleu.h"

#include <cmath>
#include <memory>
#include <vector>

#include "runtime/train/trainer.h"
#include "runtime/train/training_data.h"
#include "runtime/train/training_testing.h"
#include "gtest/gtest.h"
#include "layers/transformer.h"
#include "tests/util/peer_python.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

// Multi30k's validation pairs as training and validation data, a 500-piece
// vocabulary and a 2-layer d_model 32 Transformer.
config::TaskConfig SmallConfig() {
  config::TaskConfig config;
  config.set_task("translation");
  config::DataConfig& data = *config.mutable_data();
  for (config::CorpusConfig* corpus : {data.add_train(), data.add_valid()}) {
    corpus->set_format(config::CorpusConfig::PLAIN_TEXT);
    corpus->set_source_path(SharedDataPath("multi30k/val.en.gz"));
    corpus->set_target_path(SharedDataPath("multi30k/val.de.gz"));
  }
  data.mutable_tokenizer()->set_vocab_size(500);
  data.mutable_tokenizer()->set_seed(7);
  data.mutable_batching()->set_max_length(24);
  data.mutable_batching()->set_max_source_tokens(256);
  data.mutable_batching()->set_max_target_tokens(256);
  data.mutable_batching()->set_shuffle_buffer(64);
  config::ModelConfig& model = *config.mutable_model();
  testing::SetTinyModelShape(model);
  config::TrainConfig& train = *config.mutable_train();
  train.set_warmup_steps(4);
  train.set_max_steps(6);
  train.set_log_every_steps(2);
  train.set_validate_every_steps(2);
  train.set_checkpoint_every_minutes(0);
  train.set_validate_bleu_sentences(16);
  config.mutable_decode()->set_max_length_offset(8);
  return config;
}

class ValidationBleuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<Tokenizer> tokenizer = Tokenizer::TrainOnFiles(
        SmallConfig().data().tokenizer(),
        {SharedDataPath("multi30k/val.en.gz"), SharedDataPath("multi30k/val.de.gz")});
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = new Tokenizer(*std::move(tokenizer));
  }

  static std::unique_ptr<Transformer> MakeModel(const config::TaskConfig& config) {
    VocabularySpec vocabulary{tokenizer_->vocab_size(), tokenizer_->pad_id(), tokenizer_->bos_id(),
                              tokenizer_->eos_id()};
    absl::StatusOr<std::unique_ptr<Transformer>> model =
        Transformer::Create(config.model(), vocabulary, Device::Cpu(), /*init_seed=*/11);
    EXPECT_TRUE(model.ok()) << model.status();
    return *std::move(model);
  }

  // What a training run of `config` ends with.
  struct Outcome {
    TrainProgress progress;
    std::vector<ValidationLog> validations;
    std::vector<std::vector<float>> weights;
  };

  // Trains `config`'s model for train.max_steps, scoring validations with
  // MakeValidationBleu when `score`.
  static Outcome Train(const config::TaskConfig& config, bool score) {
    Outcome outcome;
    std::unique_ptr<Transformer> model = MakeModel(config);
    absl::StatusOr<InverseSqrtSchedule> schedule = InverseSqrtSchedule::Create(
        config.model().d_model(), config.train().warmup_steps(), config.train().lr_scale());
    absl::StatusOr<AdamOptimizer> optimizer =
        AdamOptimizer::Create(model->Parameters(), config.train().adam(), *schedule);
    EXPECT_TRUE(optimizer.ok()) << optimizer.status();
    std::unique_ptr<TokenBatcher> batcher = MakeTrainingBatcher(config.data(), *tokenizer_);
    absl::StatusOr<std::vector<Batch>> valid = LoadValidationBatches(config.data(), *tokenizer_);
    EXPECT_TRUE(valid.ok()) << valid.status();
    TrainerHooks hooks;
    hooks.save_checkpoint = [](const TrainProgress&, bool) { return absl::OkStatus(); };
    hooks.on_validation = [&](const ValidationLog& log) { outcome.validations.push_back(log); };
    if (score) {
      absl::StatusOr<ValidationScorer> scorer = MakeValidationBleu(config, *model, *tokenizer_);
      EXPECT_TRUE(scorer.ok()) << scorer.status();
      hooks.validation_score = *std::move(scorer);
    }
    Trainer trainer(model.get(), &*optimizer, batcher.get(), *std::move(valid),
                    TrainerOptions::FromConfig(config.train()), std::move(hooks));
    absl::StatusOr<StopReason> reason = trainer.Run(&outcome.progress);
    EXPECT_TRUE(reason.ok()) << reason.status();
    for (Parameter* p : model->Parameters()) outcome.weights.push_back(p->value.ToVector<float>());
    return outcome;
  }

  static Tokenizer* tokenizer_;
};

Tokenizer* ValidationBleuTest::tokenizer_ = nullptr;

TEST_F(ValidationBleuTest, RandomModelGetsAFiniteBleuInRange) {
  const config::TaskConfig config = SmallConfig();
  std::unique_ptr<Transformer> model = MakeModel(config);
  absl::StatusOr<ValidationScorer> scorer = MakeValidationBleu(config, *model, *tokenizer_);
  ASSERT_TRUE(scorer.ok()) << scorer.status();
  EXPECT_EQ(scorer->name, "bleu");
  ASSERT_TRUE(scorer->score);
  const TrainProgress progress;
  absl::StatusOr<double> first = scorer->score(progress);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(std::isfinite(*first));
  EXPECT_GE(*first, 0);
  EXPECT_LE(*first, 100);
  EXPECT_EQ(*scorer->score(progress), *first);  // Greedy: the same sentences, the same score.
}

TEST_F(ValidationBleuTest, TrainingWithTheScoreEqualsTrainingWithout) {
  const config::TaskConfig config = SmallConfig();
  const Outcome plain = Train(config, /*score=*/false);
  const Outcome scored = Train(config, /*score=*/true);
  EXPECT_EQ(scored.progress.update, 6);
  EXPECT_EQ(scored.progress.batches, plain.progress.batches);
  EXPECT_EQ(scored.progress.data, plain.progress.data);
  EXPECT_EQ(scored.weights, plain.weights);
  ASSERT_EQ(scored.validations.size(), 3u);
  ASSERT_EQ(plain.validations.size(), 3u);
  for (size_t i = 0; i < scored.validations.size(); ++i) {
    EXPECT_EQ(scored.validations[i].loss, plain.validations[i].loss);
    EXPECT_FALSE(plain.validations[i].score.has_value());
    ASSERT_TRUE(scored.validations[i].score.has_value());
    EXPECT_GE(*scored.validations[i].score, 0);
    EXPECT_LE(*scored.validations[i].score, 100);
  }
  EXPECT_GE(scored.progress.best_valid_score, 0);
}

TEST_F(ValidationBleuTest, ZeroSentencesOrNoValidationSetTurnItOff) {
  config::TaskConfig config = SmallConfig();
  std::unique_ptr<Transformer> model = MakeModel(config);
  config.mutable_train()->set_validate_bleu_sentences(0);
  absl::StatusOr<ValidationScorer> scorer = MakeValidationBleu(config, *model, *tokenizer_);
  ASSERT_TRUE(scorer.ok()) << scorer.status();
  EXPECT_FALSE(scorer->score);
  config = SmallConfig();
  config.mutable_data()->clear_valid();
  scorer = MakeValidationBleu(config, *model, *tokenizer_);
  ASSERT_TRUE(scorer.ok()) << scorer.status();
  EXPECT_FALSE(scorer->score);
}

TEST_F(ValidationBleuTest, AModelThatCannotDecodeIsAnError) {
  testing::BigramModel bigram(tokenizer_->vocab_size(), tokenizer_->bos_id());
  absl::StatusOr<ValidationScorer> scorer = MakeValidationBleu(SmallConfig(), bigram, *tokenizer_);
  EXPECT_EQ(scorer.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(scorer.status().message().find("validate_bleu_sentences"), absl::string_view::npos);
}

}  // namespace
}  // namespace tfm
