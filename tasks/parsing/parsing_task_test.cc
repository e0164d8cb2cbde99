// The parsing task's own config checks: treebank corpora only, and one leaf
// style for every treebank (the model trains and decodes in one), and a tag
// dictionary only for trees whose leaves are tags.
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/data/file_io.h"
#include "core/task_registry.h"
#include "gtest/gtest.h"
#include "tasks/parsing/parsing_config.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

config::CorpusConfig Treebank(int first, int last, config::CorpusConfig::TreeLeaves leaves) {
  config::CorpusConfig corpus;
  corpus.set_format(config::CorpusConfig::PTB_MRG);
  corpus.set_root(SharedDataPath("ptb_sample"));
  corpus.set_first_document(first);
  corpus.set_last_document(last);
  corpus.set_tree_leaves(leaves);
  return corpus;
}

void SetTagDictionaryMinCount(int min_count, config::TaskConfig* config) {
  parsing::ParsingConfig settings = ParsingSettings(*config);
  settings.set_tag_dictionary_min_count(min_count);
  SetParsingSettings(settings, config);
}

absl::Status ValidateParsing(const config::TaskConfig& config) {
  absl::StatusOr<std::unique_ptr<Task>> task = CreateTask("parsing");
  if (!task.ok()) return task.status();
  LoadedConfig loaded;
  loaded.config = config;
  loaded.sources.set_file("wsj_test.pbtxt");
  return (*task)->Validate(loaded);
}

TEST(ParsingTaskTest, EveryTreebankWritesItsLeavesAlike) {
  config::TaskConfig config;
  config.set_task("parsing");
  config::DataConfig& data = *config.mutable_data();
  *data.add_train() = Treebank(1, 169, config::CorpusConfig::WORDS);
  *data.add_valid() = Treebank(170, 179, config::CorpusConfig::WORDS);
  *data.add_test() = Treebank(180, 189, config::CorpusConfig::WORDS);
  EXPECT_TRUE(ValidateParsing(config).ok()) << ValidateParsing(config);

  data.mutable_valid(0)->clear_tree_leaves();  // PLACEHOLDERS.
  const absl::Status mixed = ValidateParsing(config);
  EXPECT_FALSE(mixed.ok());
  EXPECT_NE(mixed.message().find("wsj_test.pbtxt"), std::string::npos) << mixed;
  EXPECT_NE(mixed.message().find("data.valid[0].tree_leaves: PLACEHOLDERS, but data.train[0] "
                                 "has WORDS"),
            std::string::npos)
      << mixed;
}

// Trees are trained as the vocabulary splits them: no BPE-dropout.
TEST(ParsingTaskTest, BpeDropoutIsRefused) {
  config::TaskConfig config;
  config.set_task("parsing");
  *config.mutable_data()->add_train() = Treebank(1, 169, config::CorpusConfig::WORDS);
  EXPECT_TRUE(ValidateParsing(config).ok()) << ValidateParsing(config);
  config.mutable_data()->mutable_tokenizer()->set_bpe_dropout(0.1f);
  const absl::Status refused = ValidateParsing(config);
  EXPECT_NE(refused.message().find("data.tokenizer.bpe_dropout: parsing trains on linearized "
                                   "trees"),
            std::string::npos)
      << refused;
}

TEST(ParsingTaskTest, TagDictionaryNeedsTreesWhoseLeavesAreTags) {
  config::TaskConfig config;
  config.set_task("parsing");
  *config.mutable_data()->add_train() = Treebank(1, 169, config::CorpusConfig::POS_TAGS);
  SetTagDictionaryMinCount(5, &config);
  EXPECT_TRUE(ValidateParsing(config).ok()) << ValidateParsing(config);

  config.mutable_data()->mutable_train(0)->set_tree_leaves(config::CorpusConfig::PLACEHOLDERS);
  const absl::Status status = ValidateParsing(config);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("tag_dictionary_min_count: a tag dictionary is for "
                                  "trees whose leaves are tags"),
            std::string::npos)
      << status;
  EXPECT_NE(status.message().find("PLACEHOLDERS"), std::string::npos) << status;
}

TEST(ParsingTaskTest, SubtreesAreForTrainingTreebanksOnly) {
  config::TaskConfig config;
  config.set_task("parsing");
  config::DataConfig& data = *config.mutable_data();
  *data.add_train() = Treebank(1, 169, config::CorpusConfig::POS_TAGS);
  *data.add_valid() = Treebank(170, 179, config::CorpusConfig::POS_TAGS);
  data.mutable_train(0)->set_subtree_min_words(3);
  EXPECT_TRUE(ValidateParsing(config).ok()) << ValidateParsing(config);

  data.mutable_valid(0)->set_subtree_min_words(3);
  const absl::Status valid = ValidateParsing(config);
  EXPECT_FALSE(valid.ok());
  EXPECT_NE(valid.message().find("data.valid[0].subtree_min_words: 3: subtrees are for training"),
            std::string::npos)
      << valid;

  data.mutable_valid(0)->clear_subtree_min_words();
  data.mutable_train(0)->set_subtree_min_words(-1);
  const absl::Status negative = ValidateParsing(config);
  EXPECT_FALSE(negative.ok());
  EXPECT_NE(negative.message().find("data.train[0].subtree_min_words: -1 is negative"),
            std::string::npos)
      << negative;
}

// The main job trains as the train command does: its checkpoints, and the
// average it parses the test trees with, keep the tag counts.
// validate (as train and the main job) says what each treebank holds, so
// a partial copy's warning (ptb_corpus_test) reaches the user.
TEST(ParsingTaskTest, ValidateReportsEachTreebanksDocuments) {
  config::TaskConfig config;
  config.set_task("parsing");
  config::DataConfig& data = *config.mutable_data();
  *data.add_train() = Treebank(1, 169, config::CorpusConfig::WORDS);
  *data.add_valid() = Treebank(170, 179, config::CorpusConfig::WORDS);
  absl::StatusOr<std::unique_ptr<Task>> task = CreateTask("parsing");
  ASSERT_TRUE(task.ok()) << task.status();
  TaskContext context;
  context.config.config = config;
  context.mode = TaskMode::kValidate;
  std::ostringstream log;
  context.log = &log;
  ASSERT_TRUE((*task)->Run(context).ok()) << log.str();
  EXPECT_NE(log.str().find("data.train[0]: 169 documents (wsj_0001.mrg .. wsj_0169.mrg)"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("data.valid[0]: 10 documents"), std::string::npos) << log.str();
}

TEST(ParsingTaskTest, MainJobCheckpointsKeepTheTagCounts) {
  config::TaskConfig config;
  config.set_task("parsing");
  config.set_name("tiny");
  config::DataConfig& data = *config.mutable_data();
  *data.add_train() = Treebank(1, 4, config::CorpusConfig::POS_TAGS);
  *data.add_valid() = Treebank(5, 5, config::CorpusConfig::POS_TAGS);
  *data.add_test() = Treebank(6, 6, config::CorpusConfig::POS_TAGS);
  data.mutable_tokenizer()->set_vocab_size(300);
  data.mutable_batching()->set_max_length(400);
  config::ModelConfig& model = *config.mutable_model();
  model.set_num_encoder_layers(1);
  model.set_num_decoder_layers(1);
  model.set_d_model(16);
  model.set_d_ff(32);
  model.set_num_heads(2);
  model.set_d_k(8);
  model.set_d_v(8);
  config::TrainConfig& train = *config.mutable_train();
  train.set_max_steps(2);
  train.set_checkpoint_every_steps(1);
  train.set_validate_every_steps(0);
  train.set_validate_every_minutes(0);
  config::DecodeConfig& decode = *config.mutable_decode();
  decode.set_beam_size(2);
  decode.set_max_length_offset(20);
  SetTagDictionaryMinCount(1, &config);

  absl::StatusOr<std::unique_ptr<Task>> task = CreateTask("parsing");
  ASSERT_TRUE(task.ok()) << task.status();
  TaskContext context;
  context.config.config = config;
  context.config.sources.set_file("tiny.pbtxt");
  context.mode = TaskMode::kRun;
  context.work_dir = absl::StrCat(::testing::TempDir(), "/main_job");
  context.time_limit = absl::Minutes(1);
  context.program = "parse_wsj";
  std::ostringstream log;
  context.log = &log;
  const absl::Status status = (*task)->Run(context);
  ASSERT_TRUE(status.ok()) << status << "\n" << log.str();
  for (const char* dir : {"checkpoint_000000002", "checkpoint_average"}) {
    absl::StatusOr<std::string> counts =
        ReadFileToString(absl::StrCat(context.work_dir, "/", dir, "/task_tag_counts.tsv"));
    ASSERT_TRUE(counts.ok()) << dir << ": " << counts.status();
    EXPECT_NE(counts->find("Vinken\tNNP\t"), std::string::npos) << dir;  // wsj_0001.
  }
}

}  // namespace
}  // namespace tfm
