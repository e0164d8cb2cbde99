#include "layers/leaf_alignment.h"

#include <string>
#include <vector>

#include "runtime/decode/tree_constraint.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// ids: <pad> 0, <s> 1, </s> 2, ▁( 3, ▁(NP 4, NP 5, ▁) 6, ▁XX 7, ▁. 8, ▁ 9,
// ohn 10, ▁John 11, ( 12, )NP 13, ▁a)b 14 (a bracket inside: no piece the
// tree constraint allows, so neither a leaf nor a word).
const std::vector<std::string> kPieces = {"<pad>", "<s>", "</s>", "\u2581(", "\u2581(NP", "NP",
                                          "\u2581)", "\u2581XX", "\u2581.", "\u2581", "ohn",
                                          "\u2581John", "(", ")NP", "\u2581a)b"};

TEST(LeafAlignmentTest, TablesFromPiecesTellLeavesFromBracketsAndWordsFromContinuations) {
  const LeafAlignmentTables tables = LeafAlignmentTables::FromPieces(kPieces);
  std::vector<int> leaves, words;
  for (int id = 0; id < static_cast<int>(kPieces.size()); ++id) {
    if (tables.StartsLeaf(id)) leaves.push_back(id);
    if (tables.StartsWord(id)) words.push_back(id);
  }
  EXPECT_EQ(leaves, std::vector<int>({7, 8, 11}));  // "▁XX", "▁.", "▁John".
  EXPECT_EQ(words, std::vector<int>({3, 4, 6, 7, 8, 9, 11}));
  EXPECT_FALSE(tables.StartsLeaf(-1));
  EXPECT_FALSE(tables.StartsWord(100));
  // The words are those the tree constraint gives a leaf each.
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(kPieces, /*eos_id=*/2, /*never_ids=*/{0, 1});
  ASSERT_TRUE(constraint.ok()) << constraint.status();
  const std::vector<int> source = {11, 9, 10, 14, 8, 4, 2};
  EXPECT_EQ(WordStarts(source, tables).size(), (*constraint)->CountWords(source));
  EXPECT_EQ(WordStarts(source, tables), std::vector<int32_t>({0, 1, 4, 5}));
  EXPECT_EQ(WordAnchors(source, tables), WordStarts(source, tables));
  // Last pieces: word 1 is pieces 1-3, the last word ends before the eos.
  LeafAlignmentTables last = tables;
  last.last_piece = true;
  EXPECT_EQ(WordAnchors(source, last), std::vector<int32_t>({0, 3, 4, 5}));
}

TEST(LeafAlignmentTest, BatchPositionsFollowTheLeavesDecodedSoFar) {
  const LeafAlignmentTables tables = LeafAlignmentTables::FromPieces(kPieces);
  // Row 0: "John ohn ." as pieces ▁John | ▁ ohn | ▁. then eos: words start
  // at 0, 1 and 3, eos at 4. Row 1: "." alone (word at 0, eos at 1), padded.
  const std::vector<int> sources = {11, 9, 10, 8, 2, /*row 1*/ 8, 2, 0, 0, 0};
  const std::vector<int> lengths = {5, 2};
  // Decoder inputs: bos ▁(NP ▁XX ▁XX ▁) ▁XX ▁) | bos ▁( NP ▁. ▁) pad pad.
  const std::vector<int32_t> inputs = {1, 4, 7, 7, 6, 7, 6, /*row 1*/ 1, 3, 5, 8, 6, 0, 0};
  const std::vector<int32_t> aligned = BatchLeafAlignment(sources, 5, lengths, inputs, 7, tables);
  // Row 0: before any leaf word 0 (position 0); after 1 leaf word 1
  // (position 1); after 2 word 2 (position 3); after 3 the eos (4).
  // Row 1 starts at flat row 5: word 0 at 5, past it its eos at 6.
  EXPECT_EQ(aligned, std::vector<int32_t>({0, 0, 1, 3, 3, 4, 4, /*row 1*/ 5, 5, 5, 6, 6, 6, 6}));
}

TEST(LeafAlignmentTest, PositionPastTheLastWordIsTheEos) {
  const std::vector<int32_t> starts = {0, 2};
  EXPECT_EQ(AlignedPosition(starts, 0, 4), 0);
  EXPECT_EQ(AlignedPosition(starts, 1, 4), 2);
  EXPECT_EQ(AlignedPosition(starts, 2, 4), 3);
  EXPECT_EQ(AlignedPosition(starts, 9, 4), 3);
  EXPECT_EQ(AlignedPosition({}, 0, 1), 0);
}

}  // namespace
}  // namespace tfm
