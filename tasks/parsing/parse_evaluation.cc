#include "tasks/parsing/parse_evaluation.h"

#include <limits>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/data/file_io.h"
#include "core/paths.h"
#include "core/status_macros.h"
#include "tasks/common/decoding_device.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/ptb_corpus.h"
#include "tasks/parsing/ptb_reader.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/tree_decoding.h"

namespace tfm {
namespace {

// Parses `sentences` and scores them against `gold_lines`, printing
// examples and the summary to `log`.
absl::Status ParseAndScore(TrainedModel& trained, const config::DecodeConfig& decode,
                           const std::vector<std::string>& sentences,
                           const std::vector<std::string>& gold_lines,
                           const std::string& source_name, const std::string& gold_name,
                           std::ostream& log, std::vector<std::string>* parses,
                           const ParsingFlags& flags = {}) {
  log << "parsing " << sentences.size() << " sentences ("
      << config::DecodeConfig::Strategy_Name(decode.strategy()) << ", beam " << decode.beam_size()
      << ", alpha " << decode.length_penalty_alpha() << ", maximum length input + "
      << decode.max_length_offset() << ")\n"
      << std::flush;
  const absl::Time start = absl::Now();
  TFM_ASSIGN_OR_RETURN(*parses, DecodeLines(trained, decode, sentences, source_name, &log,
                                            TreeDecodingHooks(flags)));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const EvalbScorer scorer = ScoreParses(*parses, gold_lines, sentences, gold_name, &log);
  for (size_t i = 0; i < parses->size() && i < 5; ++i) {
    log << "\nsentence:   " << sentences[i] << "\nreference:  " << gold_lines[i]
        << "\nparsed:     " << (*parses)[i] << "\n";
  }
  log << absl::StrFormat("\n%d sentences parsed in %.1f s\n\n", parses->size(), seconds)
      << scorer.Format();
  if (ConfigLeafStyle(trained.config) == LeafStyle::kPosTag) {
    const TagAccuracy tags = ModelTagAccuracy(*parses, gold_lines);
    log << absl::StrFormat("Tagging accuracy (the model's tags) = %.2f (%d words)\n",
                           tags.percent(), tags.words);
  }
  return absl::OkStatus();
}

// Leaves left to right, for retagging.
void CollectLeaves(Tree& tree, std::vector<Tree*>* leaves) {
  if (tree.is_leaf()) {
    leaves->push_back(&tree);
    return;
  }
  for (Tree& child : tree.children) CollectLeaves(child, leaves);
}

}  // namespace

void TakeGoldTags(const Tree& gold, Tree* test) {
  std::vector<std::string> tags;
  const std::vector<std::string> all_tags = TreeTags(gold);
  for (const std::string& tag : all_tags) {
    if (tag != "-NONE-") tags.push_back(tag);
  }
  std::vector<Tree*> leaves;
  CollectLeaves(*test, &leaves);
  if (leaves.size() != tags.size()) return;
  for (size_t i = 0; i < leaves.size(); ++i) leaves[i]->label = tags[i];
}

TagAccuracy ModelTagAccuracy(const std::vector<std::string>& parses,
                             const std::vector<std::string>& gold_lines) {
  TagAccuracy accuracy;
  for (size_t i = 0; i < gold_lines.size() && i < parses.size(); ++i) {
    absl::StatusOr<Tree> gold = ParseBracketedTree(gold_lines[i]);
    absl::StatusOr<Tree> test = ParseBracketedTree(parses[i]);
    if (!gold.ok() || !test.ok()) continue;
    std::vector<std::string> gold_tags;
    for (std::string& tag : TreeTags(*gold)) {
      if (tag != "-NONE-") gold_tags.push_back(std::move(tag));
    }
    const std::vector<std::string> test_tags = TreeTags(*test);
    if (test_tags.size() != gold_tags.size()) continue;
    accuracy.words += static_cast<int64_t>(gold_tags.size());
    for (size_t w = 0; w < gold_tags.size(); ++w) accuracy.correct += test_tags[w] == gold_tags[w];
  }
  return accuracy;
}

EvalbScorer ScoreParses(const std::vector<std::string>& parses,
                        const std::vector<std::string>& gold_lines,
                        const std::vector<std::string>& sentences, const std::string& gold_name,
                        std::ostream* log) {
  EvalbScorer scorer;
  for (size_t i = 0; i < gold_lines.size(); ++i) {
    absl::StatusOr<Tree> gold = ParseBracketedTree(gold_lines[i]);
    if (!gold.ok()) {
      if (log) {
        *log << gold_name << ":" << i + 1 << ": " << gold.status().message()
             << "; counted as an EVALB error sentence\n";
      }
      const int length =
          i < sentences.size() ? static_cast<int>(InputWords(sentences[i]).size()) : 0;
      scorer.Add(EvalbErrorSentence(length, std::string(gold.status().message())));
      continue;
    }
    if (i >= parses.size() || parses[i].empty()) {
      scorer.Add(EvalbSkipSentence(EvalbLength(*gold)));
      continue;
    }
    absl::StatusOr<Tree> test = ParseBracketedTree(parses[i]);
    if (test.ok()) TakeGoldTags(*gold, &*test);
    scorer.Add(test.ok()
                   ? EvalbScoreTrees(*gold, *test)
                   : EvalbErrorSentence(EvalbLength(*gold), std::string(test.status().message())));
  }
  return scorer;
}

absl::Status RunParseEvaluation(const TaskContext& context) {
  const DecodeRequest& request = context.decode;
  TFM_ASSIGN_OR_RETURN(const ParsingFlags flags, ReadParsingFlags(context.task_flags));
  TFM_RETURN_IF_ERROR(CheckEvaluateRequest(
      request,
      "sentences, one a line, words separated by spaces; their gold trees, one "
      "bracketed tree a line"));
  TFM_ASSIGN_OR_RETURN(const DecodingTarget target, ChooseDecodingTarget(context, context.log));
  TFM_ASSIGN_OR_RETURN(TrainedModel trained,
                       LoadTrainedModel(request.model, target.device, context.log,
                                        context.config.config.task()));
  std::vector<std::string> sentences, gold_lines;
  std::string source_name = request.source, gold_name = request.reference;
  if (!request.split.empty()) {
    TFM_ASSIGN_OR_RETURN(const EvaluationSplit split, SplitCorpora(trained, request.split));
    std::vector<std::string> files;
    TFM_RETURN_IF_ERROR(ReadTreebankSentences(*split.corpora, std::numeric_limits<int>::max(),
                                              &sentences, &gold_lines, &files));
    *context.log << split.field << ": " << sentences.size() << " trees of " << files.size()
                 << " files\n";
    source_name = gold_name = split.field;
  } else {
    TFM_RETURN_IF_ERROR(ReadEvaluationFiles(request, &sentences, &gold_lines));
  }
  TFM_ASSIGN_OR_RETURN(config::DecodeConfig decode, DecodeSettings(trained.config, request));
  decode.set_nbest(1);
  std::vector<std::string> parses;
  TFM_RETURN_IF_ERROR(ParseAndScore(trained, decode, sentences, gold_lines, source_name, gold_name,
                                    *context.log, &parses, flags));
  if (!request.output.empty()) TFM_RETURN_IF_ERROR(WriteOutputLines(request.output, parses));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> TreebankFiles(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora) {
  std::vector<std::string> files;
  for (const config::CorpusConfig& corpus : corpora) {
    TFM_ASSIGN_OR_RETURN(std::vector<std::string> more,
                         PtbCorpusFiles(corpus, ResolveDataPath(corpus.root())));
    files.insert(files.end(), more.begin(), more.end());
  }
  return files;
}

absl::Status ReadTreebankSentences(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora, int limit,
    std::vector<std::string>* sentences, std::vector<std::string>* gold_lines,
    std::vector<std::string>* files) {
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> more, TreebankFiles(corpora));
  files->insert(files->end(), more.begin(), more.end());
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PtbReader> reader, PtbReader::Open(*files));
  Tree tree;
  while (static_cast<int>(sentences->size()) < limit && reader->Next(&tree)) {
    sentences->push_back(absl::StrJoin(TreeWords(tree), " "));
    gold_lines->push_back(FormatTree(tree));
  }
  return reader->status();
}

HeldOutEvaluation ParsingHeldOut() {
  HeldOutEvaluation held_out;
  held_out.command = "parse";
  held_out.example_input = "The dog saw a cat .";
  held_out.run = [](TrainedModel& trained, const TaskContext& context,
                    std::ostream& log) -> absl::StatusOr<std::string> {
    const config::DataConfig& data = context.config.config.data();
    if (data.test().empty()) {
      return absl::FailedPreconditionError(
          "data.test: the main job scores the held-out treebank, and the config has none");
    }
    std::vector<std::string> files, sentences, gold_lines;
    TFM_RETURN_IF_ERROR(
        ReadTreebankSentences(data.test(), kMainJobTestSentences, &sentences, &gold_lines, &files));
    const std::string words_path = absl::StrCat(context.work_dir, "/test.words");
    const std::string trees_path = absl::StrCat(context.work_dir, "/test.trees");
    TFM_RETURN_IF_ERROR(WriteOutputLines(words_path, sentences));
    TFM_RETURN_IF_ERROR(WriteOutputLines(trees_path, gold_lines));
    log << "\nheld-out treebank: " << sentences.size() << " trees of " << files.size() << " files ("
        << files.front() << " ..), written as " << words_path << " and " << trees_path << "\n";
    std::vector<std::string> parses;
    TFM_ASSIGN_OR_RETURN(const config::DecodeConfig decode,
                         DecodeSettings(trained.config, DecodeRequest{}));
    TFM_RETURN_IF_ERROR(ParseAndScore(trained, decode, sentences, gold_lines, words_path,
                                      trees_path, log, &parses));
    return absl::StrCat("--src=", words_path, " --ref=", trees_path);
  };
  return held_out;
}

CorpusMetric LinearizedParseF1(LeafStyle style) {
  CorpusMetric metric;
  metric.name = "f1";
  metric.score = [style](
                     const std::vector<std::string>& hypotheses,
                     const std::vector<std::string>& references) -> absl::StatusOr<CorpusScore> {
    if (hypotheses.size() != references.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(hypotheses.size(), " parses for ", references.size(), " reference trees"));
    }
    EvalbScorer scorer;
    for (size_t i = 0; i < references.size(); ++i) {
      const std::vector<std::string> gold_tokens =
          absl::StrSplit(references[i], ' ', absl::SkipEmpty());
      std::vector<std::string> words;
      for (const std::string& token : gold_tokens) {
        if (token[0] != '(' && token[0] != ')') words.push_back(absl::StrCat("w", words.size()));
      }
      const Tree gold = Delinearize(gold_tokens, words, nullptr, style);
      if (hypotheses[i].empty()) {
        scorer.Add(EvalbSkipSentence(EvalbLength(gold)));
        continue;
      }
      Tree test =
          Delinearize(absl::StrSplit(hypotheses[i], ' ', absl::SkipEmpty()), words, nullptr, style);
      TakeGoldTags(gold, &test);
      scorer.Add(EvalbScoreTrees(gold, test));
    }
    CorpusScore score;
    score.value = scorer.all().f1();
    score.report = absl::StrFormat("F1 = %.2f", score.value);
    return score;
  };
  return metric;
}

}  // namespace tfm
