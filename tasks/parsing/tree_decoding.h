// Parsing's decoding: tree-constrained search (tasks/parsing/tree_constraint.h)
// and, for every output, the tree over the input line's words in Penn
// Treebank brackets, "(S (NP (XX John)) (VP (XX sleeps)) (. .))": leaves are
// tagged XX, or with the punctuation tag the model predicted or, for copied
// words, the word's punctuation tag (EVALB deletes those words by tag). Delinearize rebuilds the tree and would repair an
// output that is not one (only possible where a source's tree cannot fit in
// its maximum length); input words that contain brackets are written as
// -LRB- and -RRB-, as in the treebank, so every line reads back.
#ifndef TFM_TASKS_PARSING_TREE_DECODING_H_
#define TFM_TASKS_PARSING_TREE_DECODING_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/ptb_corpus.h"  // ConfigLeafStyle
#include "core/data/tokenizer.h"
#include "runtime/decode/decoding_constraint.h"
#include "tasks/common/seq2seq_decoding.h"
#include "tasks/parsing/parsing_flags.h"
#include "tasks/parsing/tag_dictionary.h"

namespace tfm {

// The words of an input line: split at spaces and tabs.
std::vector<std::string> InputWords(const std::string& line);

// The bracketed tree over `line`'s words that `linearised` (decoded text,
// leaves in `style`) spells.
std::string TreeLine(const std::string& line, const std::string& linearised, LeafStyle style);

// A TreeConstraint over `tokenizer`'s pieces (pad, unk and bos never),
// copying the source's words as leaves for LeafStyle::kWord and forcing
// "XX0", "XX1", ... for LeafStyle::kIndexed; `tags` is its tag dictionary
// (LeafStyle::kPosTag; tag_dictionary.h).
absl::StatusOr<std::unique_ptr<DecodingConstraint>> MakeTreeConstraint(
    const Tokenizer& tokenizer, LeafStyle style, LeafTagDictionary tags = {});

// The input's words as the model reads them (brackets as -LRB- -RRB-), the
// constraint and TreeLine, in the model's leaf style, for DecodeLines and
// the parse command. With the ParsingConfig's tag_dictionary_min_count (or
// `flags`' --tag_dictionary) and beam search the constraint's dictionary
// comes from the checkpoint's tag counts (ParsingTaskFiles), else from the
// model's training treebank, read once (the first time it is made); greedy
// search goes without the dictionary.
DecodingHooks TreeDecodingHooks(const ParsingFlags& flags = {});

// What a parser's checkpoints keep for decoding: with part-of-speech
// leaves, the training treebank's tag counts (tag_dictionary.h's
// kTagCountsFile), so that a model directory parses with its dictionary on
// a machine without the treebank.
absl::StatusOr<TaskFiles> ParsingTaskFiles(const config::TaskConfig& config);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_TREE_DECODING_H_
