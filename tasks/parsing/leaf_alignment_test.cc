#include "tasks/parsing/leaf_alignment.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/parsing/leaf_alignment_hook.h"
#include "tasks/parsing/leaf_alignment_testing.h"
#include "tasks/parsing/tree_constraint.h"

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

// The hook the Transformer calls: its decoding steps give each row the
// memory row its training batch gives the same decoder input, also after a
// search widens the rows to a beam, reorders them and drops a sentence.
TEST(LeafAlignmentTest, HookStepsEqualTheBatchRowsThroughReorders) {
  constexpr int kVocab = 17;
  for (bool last_piece : {false, true}) {
    LeafAlignmentTables tables = SyntheticLeafAlignment(kVocab);
    tables.last_piece = last_piece;
    const std::unique_ptr<DecoderInputHook> hook = MakeLeafAlignmentHook(tables);
    // Sentence 0 of 6 ids, sentence 1 of 4, in 7 columns (one of padding).
    const std::vector<std::vector<int>> sources = {{4, 6, 8, 5, 10, 3}, {12, 7, 14, 3}};
    const SourceBatch batch = PadSources({&sources[0], &sources[1]}, /*pad_id=*/0, 1);
    // Row r of the beam decodes inputs[r]: rows 0, 1 sentence 0's, 2, 3 sentence 1's.
    const std::vector<std::vector<int32_t>> inputs = {{2, 3, 6, 9, 12, 5, 15, 3},
                                                      {2, 3, 6, 4, 9, 9, 0, 3},
                                                      {2, 12, 3, 3, 6, 1, 3, 9},
                                                      {2, 12, 3, 8, 8, 9, 6, 3}};
    const std::vector<int> row_sentence = {0, 0, 1, 1};
    // What training gives each row: its source alone in a batch of one.
    std::vector<std::vector<int32_t>> expected;
    for (size_t r = 0; r < inputs.size(); ++r) {
      const std::vector<int>& source = sources[row_sentence[r]];
      expected.push_back(hook->BatchMemoryRows(source, static_cast<int>(source.size()),
                                               {static_cast<int>(source.size())}, inputs[r],
                                               static_cast<int>(inputs[r].size())));
    }
    std::unique_ptr<DecoderInputTracker> tracker = hook->Start(batch, /*rows_per_sentence=*/1);
    std::vector<int32_t> rows(2);
    // Step 0 with one row per sentence (rows 0 and 2 of the beam share step
    // 0's and 1's inputs with their neighbours).
    for (int t = 0; t < 2; ++t) {
      tracker->Step({inputs[0][t], inputs[2][t]}, 1, absl::MakeSpan(rows));
      EXPECT_EQ(rows[0], expected[0][t]) << "step " << t;
      EXPECT_EQ(rows[1], batch.length + expected[2][t]) << "step " << t;
    }
    tracker->Reorder({0, 0, 1, 1}, {0, 1});
    rows.resize(4);
    for (int t = 2; t < 5; ++t) {
      tracker->Step({inputs[0][t], inputs[1][t], inputs[2][t], inputs[3][t]}, 2,
                    absl::MakeSpan(rows));
      for (int r = 0; r < 4; ++r) {
        EXPECT_EQ(rows[r], row_sentence[r] * batch.length + expected[r][t])
            << "row " << r << " step " << t;
      }
    }
    // Sentence 0 finishes; sentence 1's rows swap.
    tracker->Reorder({3, 2}, {1});
    rows.resize(2);
    for (int t = 5; t < 8; ++t) {
      tracker->Step({inputs[3][t], inputs[2][t]}, 2, absl::MakeSpan(rows));
      EXPECT_EQ(rows[0], expected[3][t]) << "step " << t;
      EXPECT_EQ(rows[1], expected[2][t]) << "step " << t;
    }
  }
}

}  // namespace
}  // namespace tfm
