#include "tasks/parsing/leaf_alignment_hook.h"

#include <utility>
#include <vector>

#include "tasks/parsing/parsing_config.h"

namespace tfm {
namespace {

// One search's leaves: each sentence's word anchors and length, each row's
// leaves so far.
class LeafTracker : public DecoderInputTracker {
 public:
  LeafTracker(const LeafAlignmentTables* tables, const SourceBatch& sources,
              int rows_per_sentence)
      : tables_(tables), columns_(sources.length) {
    const absl::Span<const int> all_ids(sources.ids);
    for (int s = 0; s < sources.size; ++s) {
      word_starts_.push_back(WordAnchors(
          all_ids.subspan(static_cast<size_t>(s) * sources.length, sources.lengths[s]), *tables));
    }
    lengths_.assign(sources.lengths.begin(), sources.lengths.end());
    leaves_.assign(static_cast<size_t>(sources.size) * rows_per_sentence, 0);
  }

  void Step(absl::Span<const int> last_tokens, int64_t rows_per_sentence,
            absl::Span<int32_t> memory_rows) override {
    // As BatchLeafAlignment: the row's leaves counted over its inputs up to
    // this one.
    for (size_t r = 0; r < last_tokens.size(); ++r) {
      const size_t s = r / rows_per_sentence;
      leaves_[r] += tables_->StartsLeaf(last_tokens[r]);
      memory_rows[r] = static_cast<int32_t>(
          s * columns_ + AlignedPosition(word_starts_[s], leaves_[r], lengths_[s]));
    }
  }

  void Reorder(absl::Span<const int> rows, absl::Span<const int32_t> kept) override {
    std::vector<int32_t> leaves(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) leaves[i] = leaves_[rows[i]];
    leaves_ = std::move(leaves);
    std::vector<std::vector<int32_t>> word_starts(kept.size());
    std::vector<int> lengths(kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      word_starts[i] = std::move(word_starts_[kept[i]]);
      lengths[i] = lengths_[kept[i]];
    }
    word_starts_ = std::move(word_starts);
    lengths_ = std::move(lengths);
  }

 private:
  const LeafAlignmentTables* tables_;  // The hook's, which outlives the search.
  const int64_t columns_;              // The memory's source positions per sentence.
  std::vector<std::vector<int32_t>> word_starts_;
  std::vector<int> lengths_;
  std::vector<int32_t> leaves_;
};

class LeafAlignmentHook : public DecoderInputHook {
 public:
  explicit LeafAlignmentHook(LeafAlignmentTables tables) : tables_(std::move(tables)) {}

  std::vector<int32_t> BatchMemoryRows(absl::Span<const int> sources, int source_length,
                                       absl::Span<const int> source_lengths,
                                       absl::Span<const int32_t> decoder_inputs,
                                       int target_length) const override {
    return BatchLeafAlignment(sources, source_length, source_lengths, decoder_inputs,
                              target_length, tables_);
  }

  std::unique_ptr<DecoderInputTracker> Start(const SourceBatch& sources,
                                             int rows_per_sentence) const override {
    return std::make_unique<LeafTracker>(&tables_, sources, rows_per_sentence);
  }

 private:
  LeafAlignmentTables tables_;
};

TFM_REGISTER_DECODER_INPUT_HOOK(DecoderInputHookDef{
    .name = kLeafAlignmentHook,
    .doc = "parsing: adds the encoder's output at the word whose leaf comes next",
    .create = [](const DecoderInputHookArgs& args)
        -> absl::StatusOr<std::unique_ptr<DecoderInputHook>> {
      LeafAlignmentTables tables = LeafAlignmentTables::FromPieces(args.pieces);
      tables.last_piece = ParsingSettings(*args.config).leaf_alignment_last_piece();
      return MakeLeafAlignmentHook(std::move(tables));
    },
});

}  // namespace

std::unique_ptr<DecoderInputHook> MakeLeafAlignmentHook(LeafAlignmentTables tables) {
  return std::make_unique<LeafAlignmentHook>(std::move(tables));
}

}  // namespace tfm
