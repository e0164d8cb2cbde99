// Leaf alignment (leaf_alignment_hook.h, the "leaf_alignment" hook): where each
// decoder input of a linearised tree stands in its source. After k leaves
// the next leaf is word k's, so the decoder input there also gets the
// encoder's output at word k's first piece, or its last (at the source's
// last position, its eos, once every word has its leaf). The training batch
// and the decoding steps both take their positions from here, so the two
// agree.
#ifndef TFM_TASKS_PARSING_LEAF_ALIGNMENT_H_
#define TFM_TASKS_PARSING_LEAF_ALIGNMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace tfm {

// By vocabulary id: which target pieces start a leaf and which source
// pieces start a word.
struct LeafAlignmentTables {
  std::vector<uint8_t> starts_leaf;
  std::vector<uint8_t> starts_word;

  // From the vocabulary's pieces (piece `id` = pieces[id]), read as the
  // tree constraint reads them (TreeConstraint::ClassifyPiece): a word
  // starts at a piece beginning with "▁" (SentencePiece starts every
  // whitespace-separated word with one); a leaf at a piece "▁" + text without
  // brackets ("▁XX", "▁.", "▁John"; not "▁", "▁(NP", "▁)", "▁a)b").
  static LeafAlignmentTables FromPieces(const std::vector<std::string>& pieces);

  // ParsingConfig.leaf_alignment_last_piece: anchor each word at its last
  // piece (WordAnchors).
  bool last_piece = false;

  bool StartsLeaf(int id) const { return Lookup(starts_leaf, id); }
  bool StartsWord(int id) const { return Lookup(starts_word, id); }

 private:
  static bool Lookup(const std::vector<uint8_t>& table, int id) {
    return id >= 0 && id < static_cast<int>(table.size()) && table[id] != 0;
  }
};

// The positions of the pieces that start a word in `source` (one sentence's
// ids, eos included, no padding).
std::vector<int32_t> WordStarts(absl::Span<const int> source, const LeafAlignmentTables& tables);

// Where each word of `source` (eos last) is read: its first piece, or its
// last with tables.last_piece (the piece before the next word's start, or
// before the eos).
std::vector<int32_t> WordAnchors(absl::Span<const int> source, const LeafAlignmentTables& tables);

// The source position a decoder input stands at after `leaves` leaves:
// word_starts[leaves] (any word anchors), or `source_length` - 1 (the eos)
// past the last word.
inline int32_t AlignedPosition(absl::Span<const int32_t> word_starts, int64_t leaves,
                               int source_length) {
  return leaves < static_cast<int64_t>(word_starts.size()) ? word_starts[leaves]
                                                           : source_length - 1;
}

// For a batch of `rows` sentences: sources [rows, source_length] (padded;
// row r's own length source_lengths[r]) and decoder inputs [rows,
// target_length] (bos, then the target shifted right). Returns [rows *
// target_length] rows of the encoder output flattened to [rows *
// source_length, d_model]: r * source_length + the aligned position of
// decoder input t, its leaves counted over inputs 0 .. t.
std::vector<int32_t> BatchLeafAlignment(absl::Span<const int> sources, int source_length,
                                        absl::Span<const int> source_lengths,
                                        absl::Span<const int32_t> decoder_inputs,
                                        int target_length, const LeafAlignmentTables& tables);

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_LEAF_ALIGNMENT_H_
