#include "tasks/parsing/leaf_alignment.h"

#include <algorithm>

#include "tasks/parsing/tree_constraint.h"

namespace tfm {

LeafAlignmentTables LeafAlignmentTables::FromPieces(const std::vector<std::string>& pieces) {
  LeafAlignmentTables tables;
  tables.starts_leaf.assign(pieces.size(), 0);
  tables.starts_word.assign(pieces.size(), 0);
  for (size_t id = 0; id < pieces.size(); ++id) {
    // The tree constraint's own reading of the piece: the leaves and words
    // counted here are those it makes the output's leaves match.
    const TreeConstraint::PieceClass piece_class = TreeConstraint::ClassifyPiece(pieces[id]);
    tables.starts_leaf[id] = piece_class == TreeConstraint::kLeaf;
    tables.starts_word[id] = TreeConstraint::StartsToken(piece_class);
  }
  return tables;
}

std::vector<int32_t> WordStarts(absl::Span<const int> source, const LeafAlignmentTables& tables) {
  std::vector<int32_t> starts;
  for (size_t i = 0; i < source.size(); ++i) {
    if (tables.StartsWord(source[i])) starts.push_back(static_cast<int32_t>(i));
  }
  return starts;
}

std::vector<int32_t> WordAnchors(absl::Span<const int> source, const LeafAlignmentTables& tables) {
  std::vector<int32_t> anchors = WordStarts(source, tables);
  if (!tables.last_piece) return anchors;
  // The eos is the source's last piece; the last word ends before it.
  const int32_t eos = static_cast<int32_t>(source.size()) - 1;
  for (size_t k = 0; k < anchors.size(); ++k) {
    const int32_t next = k + 1 < anchors.size() ? anchors[k + 1] : eos;
    anchors[k] = std::max(anchors[k], next - 1);
  }
  return anchors;
}

std::vector<int32_t> BatchLeafAlignment(absl::Span<const int> sources, int source_length,
                                        absl::Span<const int> source_lengths,
                                        absl::Span<const int32_t> decoder_inputs,
                                        int target_length, const LeafAlignmentTables& tables) {
  const size_t rows = source_lengths.size();
  std::vector<int32_t> aligned(rows * target_length);
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<int32_t> starts =
        WordAnchors(sources.subspan(r * source_length, source_lengths[r]), tables);
    int64_t leaves = 0;
    for (int t = 0; t < target_length; ++t) {
      leaves += tables.StartsLeaf(decoder_inputs[r * target_length + t]);
      aligned[r * target_length + t] = static_cast<int32_t>(r * source_length) +
                                       AlignedPosition(starts, leaves, source_lengths[r]);
    }
  }
  return aligned;
}

}  // namespace tfm
