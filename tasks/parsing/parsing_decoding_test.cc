// Parsing's commands on a small random Transformer saved as training saves
// it, with a vocabulary trained on treebank pairs: tree-constrained outputs
// are trees over exactly each line's words whatever the model says, bad
// lines keep their place, and evaluate scores with EVALB, reporting a gold
// file's bad lines by number. F1 itself is checked on trees with known
// bracket counts.
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/data/corpus.h"
#include "core/data/file_io.h"
#include "gtest/gtest.h"
#include "runtime/decode/forwarding_model_testing.h"
#include "runtime/train/checkpoint.h"
#include "runtime/train/checkpoint_match.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/common/trained_model.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/parse_evaluation.h"
#include "tasks/parsing/parsing_config.h"
#include "tasks/parsing/tag_dictionary.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/tree_decoding.h"
#include "tests/util/gpu.h"
#include "tests/util/peer_python.h"
#include "tests/util/tiny_model.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

// Sentences of the sample (wsj_0001, wsj_0002) and their gold trees.
const std::vector<std::string>& Sentences() {
  static const auto* sentences = new std::vector<std::string>{
      "Mr. Vinken is chairman of Elsevier N.V. , the Dutch publishing group .",
      "Rudolph Agnew , 55 years old and former chairman of Consolidated Gold Fields PLC , was "
      "named a nonexecutive director of this British industrial conglomerate .",
      "Pierre Vinken , 61 years old , will join the board as a nonexecutive director Nov. 29 ."};
  return *sentences;
}

// The model's tag dictionary settings (its ParsingConfig), as a config or
// --tag_dictionary and --open_class_tags set them.
void SetTagDictionary(int min_count, bool open_class, config::TaskConfig* config) {
  parsing::ParsingConfig settings = ParsingSettings(*config);
  settings.set_tag_dictionary_min_count(min_count);
  settings.set_tag_dictionary_open_class(open_class);
  SetParsingSettings(settings, config);
}

class ParsingDecodingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    work_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_work"));
    words_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_words"));
    indexed_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_indexed"));
    tagged_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_tagged"));
    // Ensemble members beside tagged_dir_: other weights, the same
    // vocabulary; and a vocabulary of other pieces.
    tagged_other_weights_dir_ =
        new std::string(absl::StrCat(::testing::TempDir(), "/parsing_tagged_seed9"));
    tagged_other_vocabulary_dir_ =
        new std::string(absl::StrCat(::testing::TempDir(), "/parsing_tagged_vocab380"));
    WriteRandomModel(*work_dir_, config::CorpusConfig::PLACEHOLDERS);
    WriteRandomModel(*words_dir_, config::CorpusConfig::WORDS);
    WriteRandomModel(*indexed_dir_, config::CorpusConfig::INDEXED);
    WriteRandomModel(*tagged_dir_, config::CorpusConfig::POS_TAGS);
    WriteRandomModel(*tagged_other_weights_dir_, config::CorpusConfig::POS_TAGS, /*init_seed=*/9);
    WriteRandomModel(*tagged_other_vocabulary_dir_, config::CorpusConfig::POS_TAGS,
                     /*init_seed=*/5, /*vocab_size=*/380);
    // tagged_dir_'s weights with leaf alignment and a tag dictionary, saved
    // as configs say it now and as they said it before the parsing task had
    // its ParsingConfig (deprecated fields of the engine's schema).
    aligned_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_aligned"));
    aligned_old_dir_ = new std::string(absl::StrCat(::testing::TempDir(), "/parsing_aligned_old"));
    WriteRandomModel(*aligned_dir_, config::CorpusConfig::POS_TAGS, 5, 400,
                     [](config::TaskConfig* config) {
                       config->mutable_model()->set_decoder_input_hook("leaf_alignment");
                       parsing::ParsingConfig settings;
                       settings.set_leaf_alignment_last_piece(true);
                       settings.set_tag_dictionary_min_count(1);
                       SetParsingSettings(settings, config);
                     });
    WriteRandomModel(*aligned_old_dir_, config::CorpusConfig::POS_TAGS, 5, 400,
                     [](config::TaskConfig* config) {
                       config->mutable_model()->set_decoder_leaf_alignment(true);
                       config->mutable_model()->set_decoder_leaf_alignment_last_piece(true);
                       config->mutable_decode()->set_tag_dictionary_min_count(1);
                     });
  }

  // A random model saved in `dir`, its vocabulary trained on pairs whose
  // trees write their leaves as `leaves` says.
  // `edit` changes the config saved with it (not the weights).
  static void WriteRandomModel(const std::string& dir, config::CorpusConfig::TreeLeaves leaves,
                               int init_seed = 5, int vocab_size = 400,
                               void (*edit)(config::TaskConfig*) = nullptr) {
    config::TaskConfig config;
    config.set_task("parsing");
    config::TokenizerConfig& tokenizer_config = *config.mutable_data()->mutable_tokenizer();
    tokenizer_config.set_vocab_size(vocab_size);
    tokenizer_config.set_seed(3);
    config.mutable_data()->mutable_batching()->set_max_length(256);
    config::ModelConfig& model = *config.mutable_model();
    testing::SetTinyModelShape(model, 1);
    config.mutable_decode()->set_beam_size(3);
    config.mutable_decode()->set_length_penalty_alpha(0.3);
    config.mutable_decode()->set_max_length_offset(40);
    config::CorpusConfig corpus;
    corpus.set_format(config::CorpusConfig::PTB_MRG);
    corpus.set_root(SharedDataPath("ptb_sample"));
    corpus.set_last_document(20);
    corpus.set_tree_leaves(leaves);
    *config.mutable_data()->add_train() = corpus;
    // wsj_0001-0002, three trees: what evaluate --split=valid reads.
    config::CorpusConfig& valid = *config.mutable_data()->add_valid();
    valid = corpus;
    valid.set_first_document(1);
    valid.set_last_document(2);
    absl::StatusOr<std::unique_ptr<PairReader>> pairs = OpenCorpus(corpus);
    ASSERT_TRUE(pairs.ok()) << pairs.status();
    absl::StatusOr<Tokenizer> tokenizer = Tokenizer::TrainOnPairs(tokenizer_config, pairs->get());
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    VocabularySpec vocabulary{tokenizer->vocab_size(), tokenizer->pad_id(), tokenizer->bos_id(),
                              tokenizer->eos_id()};
    absl::StatusOr<std::unique_ptr<Transformer>> transformer =
        Transformer::Create(model, vocabulary, Device::Cpu(), init_seed);
    ASSERT_TRUE(transformer.ok()) << transformer.status();
    Checkpoint checkpoint;
    checkpoint.model = ParameterTensors(**transformer);
    checkpoint.state.set_update(1);
    checkpoint.config = config;
    if (edit != nullptr) edit(&checkpoint.config);
    checkpoint.vocabulary = tokenizer->model();
    ASSERT_TRUE(WriteCheckpoint(dir, checkpoint).ok());
  }

  static TrainedModel Load(const std::string* dir = work_dir_) {
    absl::StatusOr<TrainedModel> trained = LoadTrainedModel(*dir, Device::Cpu(), nullptr);
    EXPECT_TRUE(trained.ok()) << trained.status();
    return *std::move(trained);
  }

  static std::string Path(const std::string& name) {
    return absl::StrCat(::testing::TempDir(), "/", name);
  }

  // evaluate of the placeholder model on `source` and `reference`, its
  // parses to `output`, its report to `log`.
  static TaskContext EvaluateContext(const std::string& source, const std::string& reference,
                                     const std::string& output, std::ostream* log) {
    TaskContext context;
    context.mode = TaskMode::kEvaluate;
    context.log = log;
    context.decode.model = *work_dir_;
    context.decode.source = source;
    context.decode.reference = reference;
    context.decode.output = output;
    return context;
  }

  static std::string* work_dir_;
  static std::string* words_dir_;
  static std::string* indexed_dir_;
  static std::string* tagged_dir_;
  static std::string* tagged_other_weights_dir_;
  static std::string* tagged_other_vocabulary_dir_;
  static std::string* aligned_dir_;
  static std::string* aligned_old_dir_;
};

std::string* ParsingDecodingTest::work_dir_ = nullptr;
std::string* ParsingDecodingTest::words_dir_ = nullptr;
std::string* ParsingDecodingTest::indexed_dir_ = nullptr;
std::string* ParsingDecodingTest::tagged_dir_ = nullptr;
std::string* ParsingDecodingTest::tagged_other_weights_dir_ = nullptr;
std::string* ParsingDecodingTest::tagged_other_vocabulary_dir_ = nullptr;
std::string* ParsingDecodingTest::aligned_dir_ = nullptr;
std::string* ParsingDecodingTest::aligned_old_dir_ = nullptr;

// A checkpoint saved before the parsing settings moved into ParsingConfig
// loads as one saved after it, and parses alike; leaf alignment (the hook
// its config names) changes what the same weights parse.
TEST_F(ParsingDecodingTest, CheckpointsSavedBeforeTheExtensionParseAlike) {
  TrainedModel now = Load(aligned_dir_);
  TrainedModel old = Load(aligned_old_dir_);
  EXPECT_EQ(old.config.model().decoder_input_hook(), "leaf_alignment");
  EXPECT_FALSE(old.config.model().has_decoder_leaf_alignment());
  EXPECT_TRUE(ParsingSettings(old.config).leaf_alignment_last_piece());
  EXPECT_EQ(ParsingSettings(old.config).tag_dictionary_min_count(), 1);
  const config::DecodeConfig decode = now.config.decode();
  absl::StatusOr<std::vector<std::string>> parsed_now =
      DecodeLines(now, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  absl::StatusOr<std::vector<std::string>> parsed_old =
      DecodeLines(old, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_TRUE(parsed_now.ok()) << parsed_now.status();
  ASSERT_TRUE(parsed_old.ok()) << parsed_old.status();
  EXPECT_EQ(*parsed_now, *parsed_old);
  TrainedModel unaligned = Load(tagged_dir_);
  SetTagDictionary(1, /*open_class=*/false, &unaligned.config);
  absl::StatusOr<std::vector<std::string>> parsed_unaligned =
      DecodeLines(unaligned, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_TRUE(parsed_unaligned.ok()) << parsed_unaligned.status();
  EXPECT_NE(*parsed_unaligned, *parsed_now);
}

// Tokens whose opens and closes pair up into one root over `words` leaves,
// with no constituent left without a word: what Delinearize keeps as it is
// (closes relabelled after their opens).
void ExpectCleanLinearisation(const std::string& text, const std::string& line) {
  const std::vector<std::string> tokens = absl::StrSplit(text, ' ', absl::SkipEmpty());
  const std::vector<std::string> words = InputWords(line);
  const Tree tree = Delinearize(tokens, words);
  EXPECT_NE(tree.label, kRepairRootLabel) << text;
  EXPECT_EQ(TreeWords(tree), words) << text;
  std::vector<std::string> relabelled, open;
  for (const std::string& token : tokens) {
    if (token[0] == '(') open.push_back(token.substr(1));
    if (token[0] != ')') {
      relabelled.push_back(token);
    } else {
      ASSERT_FALSE(open.empty()) << text;
      relabelled.push_back(")" + open.back());
      open.pop_back();
    }
  }
  EXPECT_EQ(Linearize(tree, LeafStyle::kPosTag), relabelled) << "repaired: " << text;
}

TEST_F(ParsingDecodingTest, ConstrainedOutputsOfARandomModelAreTreesOverTheWords) {
  TrainedModel trained = Load();
  DecodingHooks constraint_only = TreeDecodingHooks();
  constraint_only.format = nullptr;  // The linearised text itself.
  for (int beam : {1, 3}) {
    DecodeRequest request;
    request.beam = beam;
    const config::DecodeConfig decode = *DecodeSettings(trained.config, request);
    absl::StatusOr<std::vector<std::string>> texts =
        DecodeLines(trained, decode, Sentences(), "in", nullptr, constraint_only);
    ASSERT_TRUE(texts.ok()) << texts.status();
    ASSERT_EQ(texts->size(), Sentences().size());
    for (size_t i = 0; i < texts->size(); ++i) {
      ExpectCleanLinearisation((*texts)[i], Sentences()[i]);
    }
  }
  // Unconstrained, the same model writes no trees at all.
  DecodingHooks format_only = TreeDecodingHooks();
  format_only.constraint = nullptr;
  format_only.format = nullptr;
  absl::StatusOr<std::vector<std::string>> free =
      DecodeLines(trained, trained.config.decode(), Sentences(), "in", nullptr, format_only);
  ASSERT_TRUE(free.ok());
  const std::vector<std::string> tokens = absl::StrSplit((*free)[0], ' ', absl::SkipEmpty());
  EXPECT_EQ(Delinearize(tokens, InputWords(Sentences()[0])).label, kRepairRootLabel) << (*free)[0];
}

// The leaves a constrained output must have for `line`.
using ExpectedLeaves = std::vector<std::string> (*)(const std::string& line);

void ExpectForcedLeaves(TrainedModel& trained, ExpectedLeaves expected_leaves) {
  std::vector<std::string> lines = Sentences();
  lines.push_back("a ( b ) c");  // Brackets reach the model as -LRB- -RRB-.
  DecodingHooks constraint_only = TreeDecodingHooks();
  constraint_only.format = nullptr;
  for (int beam : {1, 3}) {
    DecodeRequest request;
    request.beam = beam;
    const config::DecodeConfig decode = *DecodeSettings(trained.config, request);
    absl::StatusOr<std::vector<std::string>> texts =
        DecodeLines(trained, decode, lines, "in", nullptr, constraint_only);
    ASSERT_TRUE(texts.ok()) << texts.status();
    ASSERT_EQ(texts->size(), lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      std::vector<std::string> leaves;
      for (absl::string_view token : absl::StrSplit((*texts)[i], ' ', absl::SkipEmpty())) {
        if (token[0] != '(' && token[0] != ')') leaves.emplace_back(token);
      }
      EXPECT_EQ(leaves, expected_leaves(lines[i])) << (*texts)[i];
    }
    absl::StatusOr<std::vector<std::string>> trees =
        DecodeLines(trained, decode, lines, "in", nullptr, TreeDecodingHooks());
    ASSERT_TRUE(trees.ok()) << trees.status();
    for (size_t i = 0; i < lines.size(); ++i) {
      absl::StatusOr<Tree> tree = ParseBracketedTree((*trees)[i]);
      ASSERT_TRUE(tree.ok()) << (*trees)[i];
      EXPECT_EQ(TreeWords(*tree), InputWords(lines[i]));
      EXPECT_NE(tree->label, kRepairRootLabel) << (*trees)[i];
    }
  }
}

TEST_F(ParsingDecodingTest, WordLeafModelsCopyTheInputWordsAsLeaves) {
  TrainedModel trained = Load(words_dir_);
  ASSERT_EQ(ConfigLeafStyle(trained.config), LeafStyle::kWord);
  ExpectForcedLeaves(trained, InputWords);
}

TEST_F(ParsingDecodingTest, IndexedLeafModelsNumberTheirLeavesInOrder) {
  TrainedModel trained = Load(indexed_dir_);
  ASSERT_EQ(ConfigLeafStyle(trained.config), LeafStyle::kIndexed);
  ExpectForcedLeaves(trained, [](const std::string& line) {
    std::vector<std::string> leaves;
    for (size_t i = 0; i < InputWords(line).size(); ++i) leaves.push_back(IndexedLeaf(i));
    return leaves;
  });
}

// With POS_TAGS the model writes each leaf as a tag of its choosing: the
// constrained output is a tree over the words, and the parse keeps the
// tags it wrote, in order.
TEST_F(ParsingDecodingTest, PosTagModelsWriteTaggedTrees) {
  TrainedModel trained = Load(tagged_dir_);
  ASSERT_EQ(ConfigLeafStyle(trained.config), LeafStyle::kPosTag);
  DecodingHooks constraint_only = TreeDecodingHooks();
  constraint_only.format = nullptr;
  const config::DecodeConfig decode = trained.config.decode();
  absl::StatusOr<std::vector<std::string>> texts =
      DecodeLines(trained, decode, Sentences(), "in", nullptr, constraint_only);
  absl::StatusOr<std::vector<std::string>> trees =
      DecodeLines(trained, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_TRUE(texts.ok() && trees.ok());
  ASSERT_EQ(trees->size(), Sentences().size());
  for (size_t i = 0; i < Sentences().size(); ++i) {
    ExpectCleanLinearisation((*texts)[i], Sentences()[i]);
    std::vector<std::string> leaves;
    for (absl::string_view token : absl::StrSplit((*texts)[i], ' ', absl::SkipEmpty())) {
      if (token[0] != '(' && token[0] != ')') leaves.emplace_back(token);
    }
    absl::StatusOr<Tree> tree = ParseBracketedTree((*trees)[i]);
    ASSERT_TRUE(tree.ok()) << (*trees)[i];
    EXPECT_EQ(TreeWords(*tree), InputWords(Sentences()[i])) << (*trees)[i];
    EXPECT_EQ(TreeTags(*tree), leaves) << (*texts)[i] << " -> " << (*trees)[i];
  }
  // evaluate prints the accuracy of the tags it wrote beside EVALB's.
  TaskContext context;
  context.mode = TaskMode::kEvaluate;
  std::ostringstream log;
  context.log = &log;
  context.decode.model = *tagged_dir_;
  context.decode.split = "valid";
  ASSERT_TRUE(RunParseEvaluation(context).ok()) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "Tagging accuracy (the model's tags) = ")) << log.str();
}

// --model=A,B: an ensemble decodes through the same hooks (trees over the
// words). A model beside itself under the mean of log-probabilities steps
// exactly its own distributions, so it parses exactly as it does alone;
// a member with other weights changes the n-best scores.
TEST_F(ParsingDecodingTest, EnsemblesParseTreesAndAModelBesideItselfParsesAsAlone) {
  TrainedModel alone = Load(tagged_dir_);
  const std::string twice = absl::StrCat(*tagged_dir_, ",", *tagged_dir_);
  TrainedModel doubled = Load(&twice);
  const std::string pair = absl::StrCat(*tagged_dir_, ",", *tagged_other_weights_dir_);
  TrainedModel ensemble = Load(&pair);
  ASSERT_EQ(alone.ensemble_size(), 1);
  ASSERT_EQ(doubled.ensemble_size(), 2);
  ASSERT_EQ(ensemble.ensemble_size(), 2);
  ASSERT_EQ(ensemble.other_checkpoint_dirs.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(ensemble.other_checkpoint_dirs[0], *tagged_other_weights_dir_))
      << ensemble.other_checkpoint_dirs[0];
  config::DecodeConfig decode = alone.config.decode();
  decode.set_nbest(2);
  decode.set_ensemble_combination(config::DecodeConfig::LOG_PROBABILITY_MEAN);
  absl::StatusOr<std::vector<std::string>> single =
      DecodeLines(alone, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  absl::StatusOr<std::vector<std::string>> same =
      DecodeLines(doubled, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_TRUE(single.ok() && same.ok());
  EXPECT_EQ(*single, *same);
  for (auto combination :
       {config::DecodeConfig::LOG_PROBABILITY_MEAN, config::DecodeConfig::PROBABILITY_MEAN}) {
    decode.set_ensemble_combination(combination);
    absl::StatusOr<std::vector<std::string>> both =
        DecodeLines(ensemble, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
    ASSERT_TRUE(both.ok()) << both.status();
    ASSERT_EQ(both->size(), single->size());
    EXPECT_NE(*both, *single) << "the second member changed no parse or score";
    for (const std::string& line : *both) {
      // "INDEX ||| TREE ||| SCORE"
      const std::vector<std::string> fields = absl::StrSplit(line, " ||| ");
      ASSERT_EQ(fields.size(), 3u) << line;
      absl::StatusOr<Tree> tree = ParseBracketedTree(fields[1]);
      ASSERT_TRUE(tree.ok()) << line;
      EXPECT_EQ(TreeWords(*tree), InputWords(Sentences()[std::stoi(fields[0])])) << line;
    }
  }
}

// The tree constraint's tokens ranked where the model ranks (its allowed
// bits sent to StepTopK: ops/row_top_k's column filter) give exactly the
// parses of masking each step's whole distribution on the host, for every
// leaf style (chosen, tagged with the tag dictionary, copied words,
// numbered leaves) and an ensemble of two (combined and ranked where its
// members computed the step), greedy and at beam 3, n-best 2: the same
// trees, in the same order.
TEST_F(ParsingDecodingTest, ConstrainedRankingOnTheModelEqualsMaskingOnTheHost) {
  const std::string pair = absl::StrCat(*tagged_dir_, ",", *tagged_other_weights_dir_);
  for (const std::string* dir : std::vector<const std::string*>{aligned_dir_, tagged_dir_,
                                                                words_dir_, indexed_dir_, &pair}) {
    TrainedModel trained = Load(dir);
    std::unique_ptr<EnsembleModel> ensemble;
    IncrementalModel* model = trained.model.get();
    if (trained.ensemble_size() > 1) {
      absl::StatusOr<std::unique_ptr<EnsembleModel>> made =
          trained.Decoder(trained.config.decode().ensemble_combination());
      ASSERT_TRUE(made.ok()) << made.status();
      ensemble = std::move(*made);
      model = ensemble.get();
    }
    ASSERT_TRUE(model->HasStepTopK());
    testing::HostRanked host_ranked(*model);
    DecodingHooks hooks = TreeDecodingHooks();
    hooks.model_files = trained.task_files;
    for (const int beam : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(*dir, " beam ", beam));
      DecodeRequest request;
      request.beam = beam;
      request.nbest = beam > 1 ? 2 : 1;
      const config::DecodeConfig decode = *DecodeSettings(trained.config, request);
      absl::StatusOr<std::vector<std::string>> on_model = DecodeLines(
          *model, trained.tokenizer, trained.config, decode, Sentences(), "in", nullptr, hooks);
      absl::StatusOr<std::vector<std::string>> on_host =
          DecodeLines(host_ranked, trained.tokenizer, trained.config, decode, Sentences(), "in",
                      nullptr, hooks);
      ASSERT_TRUE(on_model.ok()) << on_model.status();
      ASSERT_TRUE(on_host.ok()) << on_host.status();
      EXPECT_EQ(*on_model, *on_host);
      ASSERT_FALSE(on_model->empty());
    }
  }
}

// Parsing on the GPU: the tree constraint (its allowed tokens ranked on the
// device, an ensemble's members combined there first), the tag dictionary
// and leaf alignment
// (the decoder input hook) give the CPU's parses, alone and in an ensemble,
// greedy and at beam 3. (Random weights make flat distributions: a near tie
// could fall either way between the devices' sums; these sentences have
// none.)
TEST_F(ParsingDecodingTest, ParsesOnTheGpuEqualTheCpus) {
  TFM_SKIP_WITHOUT_GPU();
  const std::string pair = absl::StrCat(*tagged_dir_, ",", *tagged_other_weights_dir_);
  for (const std::string& dir : {*aligned_dir_, *tagged_dir_, pair}) {
    absl::StatusOr<TrainedModel> on_gpu = LoadTrainedModel(dir, Device::Cuda(0), nullptr);
    ASSERT_TRUE(on_gpu.ok()) << on_gpu.status();
    TrainedModel on_cpu = Load(&dir);
    for (int beam : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(dir, " beam ", beam));
      DecodeRequest request;
      request.beam = beam;
      const config::DecodeConfig decode = *DecodeSettings(on_cpu.config, request);
      absl::StatusOr<std::vector<std::string>> cpu_parses =
          DecodeLines(on_cpu, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
      absl::StatusOr<std::vector<std::string>> gpu_parses =
          DecodeLines(*on_gpu, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
      ASSERT_TRUE(cpu_parses.ok()) << cpu_parses.status();
      ASSERT_TRUE(gpu_parses.ok()) << gpu_parses.status();
      EXPECT_EQ(*gpu_parses, *cpu_parses);
    }
  }
}

TEST_F(ParsingDecodingTest, EnsembleMembersMustShareTaskLeavesAndVocabulary) {
  const std::string other_vocabulary =
      absl::StrCat(*tagged_dir_, ",", *tagged_other_vocabulary_dir_);
  absl::StatusOr<TrainedModel> loaded = LoadTrainedModel(other_vocabulary, Device::Cpu(), nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), *tagged_other_vocabulary_dir_))
      << loaded.status();
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "SentencePiece")) << loaded.status();
  const std::string other_leaves = absl::StrCat(*tagged_dir_, ",", *work_dir_);
  loaded = LoadTrainedModel(other_leaves, Device::Cpu(), nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "tree_leaves")) << loaded.status();
  const std::string missing = absl::StrCat(*tagged_dir_, ",", Path("no_such_model"));
  loaded = LoadTrainedModel(missing, Device::Cpu(), nullptr);
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(absl::StrContains(loaded.status().message(), "no_such_model")) << loaded.status();
}

// (word, tag) of every leaf of the trees `trained` parses `lines` into
// under `decode`.
std::vector<std::pair<std::string, std::string>> ParsedTags(TrainedModel& trained,
                                                            const config::DecodeConfig& decode,
                                                            const std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, std::string>> tagged;
  absl::StatusOr<std::vector<std::string>> trees =
      DecodeLines(trained, decode, lines, "in", nullptr, TreeDecodingHooks());
  EXPECT_TRUE(trees.ok()) << trees.status();
  if (!trees.ok()) return tagged;
  for (const std::string& line : *trees) {
    absl::StatusOr<Tree> tree = ParseBracketedTree(line);
    EXPECT_TRUE(tree.ok()) << line;
    if (!tree.ok()) continue;
    const std::vector<std::string> words = TreeWords(*tree), tags = TreeTags(*tree);
    for (size_t w = 0; w < words.size() && w < tags.size(); ++w) {
      tagged.emplace_back(words[w], tags[w]);
    }
  }
  return tagged;
}

TEST_F(ParsingDecodingTest, TagDictionaryGivesTrainingWordsOnlyTheirTrainingTags) {
  TrainedModel trained = Load(tagged_dir_);
  absl::StatusOr<TagCounts> counts = ReadTagCounts(trained.config.data().train());
  ASSERT_TRUE(counts.ok()) << counts.status();
  // Every word of the training trees is counted once.
  std::vector<std::string> sentences, gold_lines, files;
  ASSERT_TRUE(
      ReadTreebankSentences(trained.config.data().train(), 1 << 30, &sentences, &gold_lines, &files)
          .ok());
  int64_t words = 0, counted = 0;
  for (const std::string& sentence : sentences) words += InputWords(sentence).size();
  for (const auto& [word, tags] : *counts) {
    for (const auto& [tag, count] : tags) counted += count;
  }
  EXPECT_EQ(counted, words);
  EXPECT_GT((*counts)["the"]["DT"], (*counts)["the"]["NN"]);  // English.
  // The sample's first sentences are training sentences: with the
  // dictionary every listed word's leaf is one of its training tags; the
  // random model without it writes others.
  const auto listed = MakeLeafTagDictionary(*counts, trained.tokenizer, 1, /*open_class=*/false)
                          .leaf_starts_by_word;
  const auto is_listed = [&](const std::string& word) {
    const std::vector<int> pieces = trained.tokenizer.Encode(word);
    for (const auto& entry : listed) {
      if (entry.first == pieces) return true;
    }
    return false;
  };
  const auto foreign_tags = [&](const config::DecodeConfig& decode) {
    int foreign = 0, checked = 0;
    for (const auto& [word, tag] : ParsedTags(trained, decode, Sentences())) {
      if (!is_listed(word)) continue;
      ++checked;
      if ((*counts)[word].count(tag) == 0) ++foreign;
    }
    EXPECT_GT(checked, 20);
    return foreign;
  };
  config::DecodeConfig decode = trained.config.decode();
  EXPECT_GT(foreign_tags(decode), 0);
  SetTagDictionary(1, /*open_class=*/false, &trained.config);
  EXPECT_EQ(foreign_tags(decode), 0);
  // Greedy search goes without it.
  decode.set_strategy(config::DecodeConfig::GREEDY);
  EXPECT_GT(foreign_tags(decode), 0);
}

// A parser's checkpoints keep its training tag counts (ParsingTaskFiles),
// and the dictionary is made from them, not from the treebank, which a
// machine parsing with the model may not have.
TEST_F(ParsingDecodingTest, CheckpointTagCountsStandInForTheTreebank) {
  TrainedModel trained = Load(tagged_dir_);
  absl::StatusOr<TagCounts> counts = ReadTagCounts(trained.config.data().train());
  ASSERT_TRUE(counts.ok()) << counts.status();
  absl::StatusOr<TaskFiles> files = ParsingTaskFiles(trained.config);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->count(kTagCountsFile), 1u);
  absl::StatusOr<TagCounts> saved = ParseTagCounts(files->at(kTagCountsFile), "saved");
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(*saved, *counts);
  // Placeholder leaves have no tags to keep.
  EXPECT_TRUE(ParsingTaskFiles(Load(work_dir_).config)->empty());

  // Counts in which every training word is a noun, and a treebank that is
  // gone: every word comes out NN.
  TagCounts nouns;
  for (const auto& [word, tags] : *counts) nouns[word]["NN"] = 5;
  trained.task_files[kTagCountsFile] = FormatTagCounts(nouns);
  trained.config.mutable_data()->mutable_train(0)->set_root(Path("no_treebank_here"));
  const config::DecodeConfig decode = trained.config.decode();
  SetTagDictionary(1, /*open_class=*/false, &trained.config);
  const auto tagged = ParsedTags(trained, decode, Sentences());
  ASSERT_GT(tagged.size(), 20u);
  for (const auto& [word, tag] : tagged) EXPECT_EQ(tag, "NN") << word;

  // A damaged file names its line; without one the treebank is needed.
  trained.task_files[kTagCountsFile] = "the\tDT\t3\nthe DT 3\n";
  absl::StatusOr<std::vector<std::string>> bad =
      DecodeLines(trained, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the model's task_tag_counts.tsv:2: expected "
                                        "word<TAB>tag<TAB>count"),
            std::string::npos)
      << bad.status();
  trained.task_files.clear();
  absl::StatusOr<std::vector<std::string>> missing =
      DecodeLines(trained, decode, Sentences(), "in", nullptr, TreeDecodingHooks());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_treebank_here"), std::string::npos)
      << missing.status();
}

TEST_F(ParsingDecodingTest, OpenClassAndShapeTagsBindUnseenWords) {
  TrainedModel trained = Load(tagged_dir_);
  absl::StatusOr<TagCounts> counts = ReadTagCounts(trained.config.data().train());
  ASSERT_TRUE(counts.ok()) << counts.status();
  const std::vector<std::string> open_list = OpenClassTags(*counts);
  const std::set<std::string> open(open_list.begin(), open_list.end());
  // Words seen once are nouns, names, numbers, ...; never determiners,
  // conjunctions or punctuation.
  for (const char* tag : {"NN", "NNP", "NNS", "CD", "JJ"}) EXPECT_EQ(open.count(tag), 1) << tag;
  for (const char* tag : {"DT", ",", ".", "CC", "TO", "PRP"}) EXPECT_EQ(open.count(tag), 0) << tag;
  // Made-up words among known ones: with the open classes each unseen word
  // is tagged with one of them; the random model without them tags some
  // otherwise.
  const std::vector<std::string> lines = {
      "Zorblax quibbled the vexing snarfles of Grommetville .",
      "The blivets , 12,345 grommets and a frabjous wug frobbed .",
      "Snarky plonks zeebed quonkily over the glorp ."};
  const auto unseen = [&](std::string word) {
    if (counts->count(word) > 0) return false;
    word[0] = absl::ascii_tolower(static_cast<unsigned char>(word[0]));
    return counts->count(word) == 0;
  };
  const ShapeTags shapes(*counts);
  // Unseen words take their shape's tags: numbers are CD, "-ed" words in
  // lower case are verbs or adjectives, not names.
  EXPECT_EQ(shapes.Of("4,567").count("CD"), 1);
  EXPECT_EQ(shapes.Of("4,567").count("NNP"), 0);
  const std::set<std::string> ed = shapes.Of("frobbled");
  EXPECT_TRUE(ed.count("VBN") == 1 || ed.count("VBD") == 1) << absl::StrJoin(ed, " ");
  EXPECT_EQ(ed.count("NNP"), 0) << absl::StrJoin(ed, " ");
  EXPECT_EQ(shapes.Of("Zorblax").count("NNP"), 1);
  const auto closed_tags = [&](bool open_class) {
    const config::DecodeConfig decode = trained.config.decode();
    SetTagDictionary(5, open_class, &trained.config);
    int closed = 0, checked = 0;
    for (const auto& [word, tag] : ParsedTags(trained, decode, lines)) {
      if (!unseen(word)) continue;
      ++checked;
      // Its shape's tags where they are known, else the open classes.
      const std::set<std::string> by_shape = shapes.Of(word);
      if ((by_shape.empty() ? open : by_shape).count(tag) == 0) ++closed;
    }
    EXPECT_GE(checked, 12);
    return closed;
  };
  EXPECT_EQ(closed_tags(true), 0);
  EXPECT_GT(closed_tags(false), 0);
}

TEST_F(ParsingDecodingTest, ParseCommandWritesOneTreeLinePerInputLine) {
  const std::string input = Path("parse_in.txt"), output = Path("parse_out.txt");
  const std::vector<std::string> lines = {Sentences()[0], "", "bad \xff bytes", "a ( b )",
                                          Sentences()[2]};
  ASSERT_TRUE(WriteFileAtomically(input, absl::StrJoin(lines, "\n") + "\n").ok());
  TaskContext context;
  context.mode = TaskMode::kDecode;
  context.decode.model = *work_dir_;
  context.decode.input = input;
  context.decode.output = output;
  ASSERT_TRUE(RunDecodeCommand(context, TreeDecodingHooks()).ok());
  absl::StatusOr<std::string> written = ReadFileToString(output);
  ASSERT_TRUE(written.ok());
  const std::vector<std::string> out = absl::StrSplit(*written, '\n');
  ASSERT_EQ(out.size(), lines.size() + 1);  // The last line ends with '\n'.
  EXPECT_EQ(out[1], "");
  EXPECT_EQ(out[2], "");
  for (int i : {0, 3, 4}) {
    absl::StatusOr<Tree> tree = ParseBracketedTree(out[i]);
    ASSERT_TRUE(tree.ok()) << out[i];
    EXPECT_EQ(TreeWords(*tree), InputWords(lines[i])) << out[i];
  }
  EXPECT_EQ(InputWords("a ( b )"), (std::vector<std::string>{"a", "-LRB-", "b", "-RRB-"}));
}

TEST_F(ParsingDecodingTest, EvaluateReportsBadGoldLinesAndScoresTheRest) {
  const std::string source = Path("eval.words"), reference = Path("eval.trees");
  const std::string output = Path("eval.out");
  std::vector<std::string> gold_lines;
  config::CorpusConfig corpus;
  corpus.set_format(config::CorpusConfig::PTB_MRG);
  corpus.set_root(SharedDataPath("ptb_sample"));
  corpus.set_last_document(2);
  absl::StatusOr<std::unique_ptr<PairReader>> pairs = OpenCorpus(corpus);
  ASSERT_TRUE(pairs.ok());
  std::vector<std::string> sentences;
  SentencePair pair;
  while (*(*pairs)->Next(&pair)) {
    sentences.push_back(pair.source);
    const std::vector<std::string> tokens = absl::StrSplit(pair.target, ' ');
    gold_lines.push_back(FormatTree(Delinearize(tokens, absl::StrSplit(pair.source, ' '))));
  }
  ASSERT_EQ(sentences.size(), 3u);
  gold_lines[1].pop_back();  // Unbalanced.
  ASSERT_TRUE(WriteFileAtomically(source, absl::StrJoin(sentences, "\n") + "\n").ok());
  ASSERT_TRUE(WriteFileAtomically(reference, absl::StrJoin(gold_lines, "\n") + "\n").ok());
  std::ostringstream log;
  TaskContext context = EvaluateContext(source, reference, output, &log);
  ASSERT_TRUE(RunParseEvaluation(context).ok()) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), reference + ":2: malformed tree")) << log.str();
  EXPECT_FALSE(absl::StrContains(log.str(), reference + ":1:")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "Number of Error sentence  =      1")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "Number of Valid sentence  =      2")) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "\nF1 = ")) << log.str();
  absl::StatusOr<std::string> parsed = ReadFileToString(output);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(*parsed, '\n', absl::SkipEmpty())).size(), 3u);

  // Mismatched files are an error naming both.
  context.decode.reference = source + ".none";
  ASSERT_TRUE(WriteFileAtomically(context.decode.reference, "(S (XX a))\n").ok());
  const absl::Status mismatch = RunParseEvaluation(context);
  EXPECT_TRUE(absl::StrContains(mismatch.message(), source)) << mismatch;
}

// evaluate --split=valid parses the treebank files that the model's saved
// config names as data.valid, exactly as --src/--ref of the words and trees
// read from them (what the main job writes for data.test) would.
TEST_F(ParsingDecodingTest, EvaluateSplitParsesTheModelsOwnHeldOutTreebank) {
  TrainedModel trained = Load();
  std::vector<std::string> sentences, gold_lines, files;
  ASSERT_TRUE(
      ReadTreebankSentences(trained.config.data().valid(), 1000, &sentences, &gold_lines, &files)
          .ok());
  ASSERT_EQ(files.size(), 2u);
  ASSERT_EQ(sentences.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(sentences[0], "Pierre Vinken , 61 years old")) << sentences[0];
  EXPECT_TRUE(absl::StartsWith(gold_lines[0], "(S (NP (NP (NNP Pierre) (NNP Vinken))"))
      << gold_lines[0];
  const std::string source = Path("split.words"), reference = Path("split.trees");
  ASSERT_TRUE(WriteFileAtomically(source, absl::StrJoin(sentences, "\n") + "\n").ok());
  ASSERT_TRUE(WriteFileAtomically(reference, absl::StrJoin(gold_lines, "\n") + "\n").ok());

  std::ostringstream log;
  TaskContext context = EvaluateContext(source, reference, Path("split_files.out"), &log);
  ASSERT_TRUE(RunParseEvaluation(context).ok()) << log.str();
  context.decode.source.clear();
  context.decode.reference.clear();
  context.decode.split = "valid";
  context.decode.output = Path("split_valid.out");
  ASSERT_TRUE(RunParseEvaluation(context).ok()) << log.str();
  EXPECT_TRUE(absl::StrContains(log.str(), "data.valid: 3 trees of 2 files")) << log.str();
  EXPECT_FALSE(absl::StrContains(log.str(), "the model's tags")) << log.str();  // Placeholders.
  absl::StatusOr<std::string> from_files = ReadFileToString(Path("split_files.out"));
  absl::StatusOr<std::string> from_split = ReadFileToString(Path("split_valid.out"));
  ASSERT_TRUE(from_files.ok() && from_split.ok());
  EXPECT_EQ(*from_split, *from_files);
  EXPECT_EQ(std::count(from_split->begin(), from_split->end(), '\n'), 3);

  context.decode.split = "test";  // The config has none.
  const absl::Status missing = RunParseEvaluation(context);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(missing.message(), "has no data.test")) << missing;
}

// The model's own tags against gold, words aligned; empty elements are not
// words, and parses that are no tree or have other leaves are left out.
TEST(ScoreParsesTest, ModelTagAccuracyCountsTheWordsOfComparableParses) {
  const std::vector<std::string> gold = {
      "(S (NP (DT The) (NN dog)) (VP (VBD barked) (NP (-NONE- *T*))) (. .))",
      "(S (NP (PRP It)) (VP (VBZ works)))", "(S (NP (PRP It)) (VP (VBZ works)))",
      "(S (NP (NNS Cats)) (VP (VBP sleep)))"};
  const std::vector<std::string> parses = {
      "(S (NP (DT The) (VB dog)) (VP (VBD barked)) (. .))",  // 3 of 4.
      "(S (NP (PRP It) (VBZ works)",                         // Not a tree.
      "(S (XX It))",                                         // One leaf short.
      "(S (NP (NNS Cats)) (VP (VBZ sleep)))"};               // 1 of 2.
  const TagAccuracy accuracy = ModelTagAccuracy(parses, gold);
  EXPECT_EQ(accuracy.words, 6);
  EXPECT_EQ(accuracy.correct, 4);
  EXPECT_NEAR(accuracy.percent(), 66.67, 0.01);
}

TEST(ScoreParsesTest, F1OfKnownTrees) {
  // Gold: S(0,4) NP(0,2) VP(2,4) NP(3,4) over "The dog chased cats ." (the
  // final "." deleted). Parse 1 finds S, VP and NP(3,4) but a wrong NP(0,1):
  // 3 of its 4 brackets match; parse 2 matches all 3; line 3 of the gold
  // file is unbalanced. Its "." is tagged XX, as a
  // model that predicts no tags writes it: the gold tags decide deletion.
  const std::vector<std::string> gold = {
      "(S (NP (DT The) (NN dog)) (VP (VBD chased) (NP (NNS cats))) (. .))",
      "(S (NP (PRP It)) (VP (VBD rained)) (. .))", "(S (NP (PRP It)) (VP (VBD rained) (. .)"};
  const std::vector<std::string> sentences = {"The dog chased cats .", "It rained .",
                                              "It rained ."};
  const std::vector<std::string> parses = {
      "(S (NP (XX The)) (XX dog) (VP (XX chased) (NP (XX cats))) (XX .))",
      "(S (NP (XX It)) (VP (XX rained)) (. .))", "(S (XX It) (XX rained) (. .))"};
  std::ostringstream log;
  const EvalbScorer scorer = ScoreParses(parses, gold, sentences, "gold.txt", &log);
  const EvalbTotals& all = scorer.all();
  EXPECT_EQ(all.sentences, 3);
  EXPECT_EQ(all.error_sentences, 1);
  EXPECT_EQ(all.gold_brackets, 4 + 3);
  EXPECT_EQ(all.test_brackets, 4 + 3);
  EXPECT_EQ(all.matched, 3 + 3);
  EXPECT_NEAR(all.f1(), 100.0 * 6 / 7, 1e-9);
  EXPECT_TRUE(absl::StrContains(log.str(), "gold.txt:3: malformed tree")) << log.str();
  // An empty parse is an EVALB skip sentence.
  const EvalbScorer skipped =
      ScoreParses({"", parses[1]}, {gold[0], gold[1]}, sentences, "g", nullptr);
  EXPECT_EQ(skipped.all().skip_sentences, 1);
  EXPECT_NEAR(skipped.all().f1(), 100.0, 1e-9);
}

// Validation's F1 works on linearised trees: the same counts as
// F1OfKnownTrees, with the references linearised from the gold trees.
TEST(ScoreParsesTest, ValidationF1OfLinearisedTrees) {
  std::vector<std::string> references;
  for (const char* gold : {"(S (NP (DT The) (NN dog)) (VP (VBD chased) (NP (NNS cats))) (. .))",
                           "(S (NP (PRP It)) (VP (VBD rained)) (. .))"}) {
    absl::StatusOr<Tree> tree = ParseBracketedTree(gold);
    ASSERT_TRUE(tree.ok()) << tree.status();
    references.push_back(absl::StrJoin(Linearize(*tree), " "));
  }
  ASSERT_EQ(references[1], "(S (NP XX )NP (VP XX )VP . )S");
  const CorpusMetric metric = LinearizedParseF1();
  EXPECT_EQ(metric.name, "f1");
  // Parse 1: a wrong NP(0, 1), the "." written as XX (the reference's tag
  // deletes it); parse 2 exact.
  absl::StatusOr<CorpusScore> score =
      metric.score({"(S (NP XX )NP XX (VP XX (NP XX )NP )VP XX )S", references[1]}, references);
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_NEAR(score->value, 100.0 * 6 / 7, 1e-9);
  EXPECT_EQ(score->report, "F1 = 85.71");
  // An empty output is a skip; a broken one is repaired, not an error (VP
  // and S never closed: S, NP, VP still match).
  score = metric.score({"", "(S (NP XX )NP (VP XX ."}, references);
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_NEAR(score->value, 100.0, 1e-9);
  EXPECT_FALSE(metric.score({"(S XX )S"}, references).ok());
}

}  // namespace
}  // namespace tfm
