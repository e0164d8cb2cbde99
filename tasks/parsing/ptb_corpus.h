// A treebank as a parsing corpus (Vinyals et al. 2015; the paper, section
// 6.3): each tree, cleaned as parsers are evaluated (NormalizePtbTree),
// becomes the pair (its words joined by spaces, its linearised tree as
// linearize.h writes it).
#ifndef TFM_TASKS_PARSING_PTB_CORPUS_H_
#define TFM_TASKS_PARSING_PTB_CORPUS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "tasks/parsing/linearize.h"
#include "core/data/pair_reader.h"

namespace tfm {

// The .mrg files of a PTB_MRG corpus (`root` already resolved), in document
// order: wsj_NNNN.mrg in root or in its two-digit section folders, with NNNN
// in first_document..last_document. A root that cannot be read, or that
// holds no such file, is NotFound naming the corpus and root.
absl::StatusOr<std::vector<std::string>> PtbCorpusFiles(const config::CorpusConfig& corpus,
                                                        const std::string& root);

// The check before a run (CorpusFormatDef::check): the documents found, and
// a warning when some of an explicit first_document..last_document range
// are missing; errors as PtbCorpusFiles.
absl::StatusOr<std::string> DescribePtbCorpus(const config::CorpusConfig& corpus);

// The linearisation's leaf style a corpus's tree_leaves asks for.
LeafStyle TreeLeafStyle(config::CorpusConfig::TreeLeaves leaves);

// The leaf style of a parsing config's linearised trees (its first
// training treebank's tree_leaves; ParsingTask checks that they all agree).
// Placeholders for a config without training corpora or tree_leaves.
LeafStyle ConfigLeafStyle(const config::TaskConfig& config);

// Pairs (words, linearised tree with `leaves`) of every well-formed tree in
// `files`; malformed trees are skipped and counted. With
// `subtree_min_words` > 0, each tree is followed by the pairs of its
// constituents below the root that span at least that many words, in
// preorder (CorpusConfig.subtree_min_words).
absl::StatusOr<std::unique_ptr<PairReader>> OpenPtbCorpus(
    std::vector<std::string> files, LeafStyle leaves = LeafStyle::kPlaceholder,
    int subtree_min_words = 0);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_PTB_CORPUS_H_
