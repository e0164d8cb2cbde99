// Scoring parses with EVALB's COLLINS.prm conventions (tasks/parsing/evalb.h)
// and parsing's evaluate command and main-job step:
//   evaluate --model=DIR --src=FILE --ref=FILE: FILE of sentences (words
//     separated by spaces) and FILE of their gold trees, one bracketed tree a
//     line; or --split=valid|test: the model's own held-out treebank; prints
//     examples, EVALB's summary and "F1 = ...".
// Before scoring, a parse's leaves take the gold tree's tags (a placeholder
// model's leaves are XX, or the punctuation tag it guessed). EVALB uses tags
// only to delete punctuation, so brackets are then counted over the same
// words in both trees, as for a parser given gold tags, and EVALB's tagging
// accuracy is meaningless here; a model that writes tags (POS_TAGS) gets
// its own tagging accuracy printed beside (ModelTagAccuracy).
//
// A reference line that is not a tree (unbalanced brackets, text outside
// them, empty) is reported as FILE:LINE with what is wrong and counted as an
// EVALB error sentence; every other line is still parsed and scored.
#ifndef TFM_TASKS_PARSING_PARSE_EVALUATION_H_
#define TFM_TASKS_PARSING_PARSE_EVALUATION_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/tree.h"
#include "tasks/parsing/evalb.h"
#include "core/task_registry.h"
#include "tasks/common/corpus_metric.h"
#include "tasks/common/seq2seq_main_job.h"

namespace tfm {

// Gives `test`'s leaves the tags of `gold`'s leaves other than -NONE-,
// when they are as many (else leaves `test` as it is).
void TakeGoldTags(const Tree& gold, Tree* test);

// Scores `parses[i]` (a bracketed tree, or empty where the sentence was not
// parsed: an EVALB skip) against `gold_lines[i]`; `gold_name` names the gold
// file in messages on `log`. `sentences[i]` gives an unreadable gold line's
// length for EVALB's cut-off.
EvalbScorer ScoreParses(const std::vector<std::string>& parses,
                        const std::vector<std::string>& gold_lines,
                        const std::vector<std::string>& sentences, const std::string& gold_name,
                        std::ostream* log);

// evaluate: --src/--ref files, or --split=valid|test's treebank files of the
// model's saved config, read as ReadTreebankSentences does.
absl::Status RunParseEvaluation(const TaskContext& context);

// The model's own part-of-speech tags (tree_leaves: POS_TAGS) against the
// gold ones, before scoring gives its leaves the gold tags: words other
// than -NONE-, over the parses that read as trees with as many leaves.
struct TagAccuracy {
  int64_t words = 0;
  int64_t correct = 0;
  double percent() const { return words > 0 ? 100.0 * correct / words : 0.0; }
};
TagAccuracy ModelTagAccuracy(const std::vector<std::string>& parses,
                             const std::vector<std::string>& gold_lines);

// The .mrg files of `corpora` (PTB_MRG treebanks; roots resolved as data
// paths), in order.
absl::StatusOr<std::vector<std::string>> TreebankFiles(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora);

// The sentences (words separated by spaces) and gold trees (one bracketed
// tree a line, as PtbReader reads them) of `corpora`'s treebank files in
// order, at most `limit`; `files` gets the files read. The main job's
// test.words and test.trees, and evaluate --split, come from here.
absl::Status ReadTreebankSentences(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora, int limit,
    std::vector<std::string>* sentences, std::vector<std::string>* gold_lines,
    std::vector<std::string>* files);

// Validation F1 during training (train.validate_bleu_sentences lines of
// data.valid, decoded greedily under the tree constraint): hypotheses and
// references are linearised trees with leaves in `style`
// (tasks/parsing/linearize.h). Both are rebuilt with Delinearize over
// stand-in words, as many as the reference has leaves (EVALB counts spans,
// not words), the hypothesis takes the reference's leaf tags (punctuation
// is then deleted from both alike) and EVALB's F1 over all lines is the
// score, named "f1": checkpoint_best and patience follow it.
CorpusMetric LinearizedParseF1(LeafStyle style = LeafStyle::kPlaceholder);

// The main job's: parse the trees of data.test (their words), write
// WORK_DIR/test.words and test.trees, and print F1 against the trees.
HeldOutEvaluation ParsingHeldOut();

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_PARSE_EVALUATION_H_
