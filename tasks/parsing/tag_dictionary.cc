#include "tasks/parsing/tag_dictionary.h"

#include <memory>

#include "core/data/ptb_reader.h"
#include "core/data/tree.h"
#include "core/decode/tree_constraint.h"
#include "core/status_macros.h"
#include "tasks/parsing/parse_evaluation.h"

namespace tfm {

absl::StatusOr<TagCounts> ReadTagCounts(
    const google::protobuf::RepeatedPtrField<config::CorpusConfig>& corpora) {
  TFM_ASSIGN_OR_RETURN(std::vector<std::string> files, TreebankFiles(corpora));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<PtbReader> reader, PtbReader::Open(files));
  TagCounts counts;
  Tree tree;
  while (reader->Next(&tree)) {
    const std::vector<std::string> words = TreeWords(tree);
    const std::vector<std::string> tags = TreeTags(tree);
    for (size_t i = 0; i < words.size() && i < tags.size(); ++i) ++counts[words[i]][tags[i]];
  }
  TFM_RETURN_IF_ERROR(reader->status());
  return counts;
}

std::vector<std::pair<std::vector<int>, std::vector<int>>> LeafStartsByWord(
    const TagCounts& counts, const Tokenizer& tokenizer, int64_t min_count) {
  // A tag's leaf piece, or -1 where the vocabulary spells it in several.
  std::map<std::string, int> leaf_piece;
  const auto piece_of = [&](const std::string& tag) {
    const auto found = leaf_piece.find(tag);
    if (found != leaf_piece.end()) return found->second;
    const std::vector<int> ids = tokenizer.Encode(tag);
    const bool whole = ids.size() == 1 && TreeConstraint::ClassifyPiece(tokenizer.IdToPiece(
                                              ids[0])) == TreeConstraint::kLeaf;
    return leaf_piece[tag] = whole ? ids[0] : -1;
  };
  std::vector<std::pair<std::vector<int>, std::vector<int>>> dictionary;
  for (const auto& [word, tags] : counts) {
    int64_t seen = 0;
    for (const auto& [tag, count] : tags) seen += count;
    if (seen < min_count) continue;
    std::vector<int> pieces;
    bool whole = true;
    for (const auto& [tag, count] : tags) {
      const int piece = piece_of(tag);
      whole = whole && piece >= 0;
      pieces.push_back(piece);
    }
    if (whole) dictionary.emplace_back(tokenizer.Encode(word), std::move(pieces));
  }
  return dictionary;
}

}  // namespace tfm
