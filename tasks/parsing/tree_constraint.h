// Tree-constrained decoding for parsing as translation: every output spells
// a well-formed linearised tree (tasks/parsing/linearize.h: "(S (NP XX )NP (VP
// XX )VP . )S") with exactly one leaf per source word.
//
// With copied words (LeafStyle::kWord: "(S (NP John )NP (VP sleeps )VP
// )S") a leaf is not chosen by the model: wherever a leaf may come, the one
// allowed is the next source word, spelled in exactly the source's pieces,
// and no other leaf text is. With numbered leaves (LeafStyle::kIndexed:
// "(S (NP XX0 )NP (VP XX1 )VP )S") leaf i is forced to the pieces of its
// spelling "XXi" the same way. The model then only decides where brackets
// go: "▁(" or "▁)" and a label in capital letters ("NP"; SentencePiece
// splits brackets from letters), or a whole "▁(NP". Text that is not a
// label (a piece of a word the model would rather write) never extends a
// bracket.
//
// The model writes SentencePiece pieces, not tree tokens: a piece that
// starts with "▁" starts a space-separated token, any other piece continues
// the current one, so a rare bracket may come in parts ("▁(" "WH" "ADJP").
// The constraint follows the text the pieces spell, in which a token is an
// open ("(" and a label), a close (")" and any label: Delinearize closes the
// innermost constituent whatever it says) or a leaf (any other text without
// brackets), and allows a piece only when, after it,
//  - the first token opens the root, and nothing but eos follows its close;
//  - a close closes an open constituent that already covers a word, and
//    the root closes only over every word;
//  - a leaf is inside the root and leaves do not outnumber the words; an
//    open leaves a word for the new constituent;
//  - the tree can still be completed within the hypothesis's maximum
//    length (the shortest completion, from the vocabulary's cheapest
//    pieces for a leaf and a close, still fits),
// and eos only when the root has closed over exactly the source's words.
// With a tag dictionary (LeafRule::leaf_starts_by_word: leaves that are
// part-of-speech tags), a listed word's leaf is also one of its tags.
// Words are counted in the source as the pieces that start with "▁"
// (SentencePiece starts every whitespace-separated word with one).
//
// A source whose tree cannot fit in its maximum length at all (a tiny
// max_length_offset) keeps the bracket rules without the length rule and
// may be cut at the maximum length; Delinearize repairs what the search
// returns in every case.
#ifndef TFM_TASKS_PARSING_TREE_CONSTRAINT_H_
#define TFM_TASKS_PARSING_TREE_CONSTRAINT_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/decode/decoding_constraint.h"

namespace tfm {

// Who writes the leaves.
struct LeafRule {
  enum Kind {
    kChosen,       // The model, from leaf pieces ("XX", "."): LeafStyle::kPlaceholder.
    kSourceWords,  // Copies of the source's words: LeafStyle::kWord.
    kSpelled,      // spellings[i] for leaf i: LeafStyle::kIndexed. A source
                   // with more words than spellings is not constrained.
  };
  Kind kind = kChosen;
  std::vector<std::vector<int>> spellings;
  // kChosen only, a tag dictionary (leaves that are part-of-speech tags): a
  // source word spelled in exactly the pieces `first` takes a leaf that
  // starts with one of the pieces `second`, each a whole leaf piece ("▁NN"),
  // not a lone "▁"; an entry with no pieces leaves its word free (its tags
  // are spelled in several pieces). Words not listed take a leaf that
  // starts with one of `unlisted_leaf_starts` (the open-class tags: a word
  // never seen in training is a noun, a name, a number, ..., not a
  // determiner), or any leaf when that is empty.
  std::vector<std::pair<std::vector<int>, std::vector<int>>> leaf_starts_by_word;
  std::vector<int> unlisted_leaf_starts;
};

class TreeConstraint : public DecodingConstraint {
 public:
  // `pieces[id]` is the vocabulary's piece for id. `eos_id` ends outputs;
  // `never_ids` (pad, unk, bos) are never allowed, except as a forced leaf
  // piece. `leaves` says who writes the leaves (above). Fails when the
  // pieces cannot spell an open, a close and a leaf.
  static absl::StatusOr<std::unique_ptr<TreeConstraint>> Create(
      const std::vector<std::string>& pieces, int eos_id, const std::vector<int>& never_ids,
      LeafRule leaves = {});

  int state_size() const override { return kStateSize; }
  int64_t vocabulary_size() const override { return static_cast<int64_t>(class_of_.size()); }
  void Start(absl::Span<const int> source, int max_length, int32_t* state) const override;
  void AllowedTokens(const int32_t* state, absl::Span<const int> source,
                     uint32_t* allowed) const override;
  void Advance(int token, absl::Span<const int> source, int32_t* state) const override;

  // Whether `token` is allowed after `state` (its bit in AllowedTokens),
  // token by token.
  bool Allows(const int32_t* state, absl::Span<const int> source, int token) const;

  // Words the constraint counts in `source`.
  int CountWords(absl::Span<const int> source) const;

  // Deeper nesting is never allowed: Delinearize (and every recursive tree
  // function) keeps it, tasks/parsing/tree.h's kMaxTreeDepth being 500.
  static constexpr int kMaxDepth = 400;

  // What a piece does to the text, by what it starts with.
  enum PieceClass : uint8_t {
    kNever,            // Special, or brackets inside a token.
    kSpace,            // "▁" alone: a token starts, its text follows.
    kOpenBare,         // "▁(": an open whose label follows.
    kOpenLabeled,      // "▁(NP"
    kClose,            // "▁)" or "▁)NP"
    kLeaf,             // "▁XX", "▁."
    kContinueOpenBare,     // "(" after "▁".
    kContinueOpenLabeled,  // "(NP" after "▁".
    kContinueClose,        // ")NP" after "▁".
    kContinueText,         // Text without brackets: a leaf after "▁", else
                           // more of the current token's label or leaf.
    kContinueLabel,        // The same, all capital letters ("NP", "XX"):
                           // with forced leaves, the only text the model
                           // writes, and only as a bracket's label.
    kEnd,                  // eos.
    kNumClasses,
  };
  // A piece's class by its text alone (never kEnd: eos and the never ids
  // are set apart by id). Also what leaf alignment counts
  // leaves and words by (tasks/parsing/leaf_alignment.h), so the two agree.
  static PieceClass ClassifyPiece(absl::string_view piece);
  // Whether a piece of this class starts a space-separated token ("▁..."):
  // a source word, with leaves chosen by the model.
  static bool StartsToken(PieceClass piece_class) {
    return piece_class == kSpace || piece_class == kOpenBare || piece_class == kOpenLabeled ||
           piece_class == kClose || piece_class == kLeaf;
  }

 private:
  // State values: what the text spelled so far leaves open.
  // kCursor: the source piece a copied leaf takes next (kSourceWords), or
  // the piece of the current leaf's spelling (kSpelled); kWordsEnd: where
  // the source's words end (its eos).
  enum StateIndex {
    kLex, kDepth, kLeaves, kWords, kFlags, kTaken, kMaxLength, kCursor, kWordsEnd, kStateSize
  };

  struct State;

  TreeConstraint() = default;

  // Applies `piece_class` to `state`; false when the rules forbid it.
  bool Apply(PieceClass piece_class, State& state) const;
  // Forced leaves: whether the next forced piece may come now (it starts or
  // continues a leaf), which it is, and taking it.
  bool CopyAllowed(const State& state, absl::Span<const int> source) const;
  int ForcedPiece(const State& state, absl::Span<const int> source) const;
  void ApplyCopy(absl::Span<const int> source, State& state) const;
  // Pieces of the leaves still to come.
  int64_t LeavesCost(const State& state) const;
  bool StartsWord(int id) const {
    return id >= 0 && id < static_cast<int>(starts_word_.size()) && starts_word_[id];
  }
  // Pieces, eos included, of the shortest completion of `state` (a large
  // number when there is none).
  int64_t CompletionCost(const State& state) const;
  std::array<bool, kNumClasses> AllowedClasses(const int32_t* values) const;
  // The leaf pieces the next leaf may start with (sorted), or null when the
  // word it is for may take any leaf (no tag dictionary, or the word is not
  // listed and unlisted words are free).
  const std::vector<int>* LeafStarts(const State& state, absl::Span<const int> source) const;
  // The classes of `allowed` (AllowedClasses) that the tag dictionary
  // leaves after `state`, given the next leaf's allowed pieces `starts`
  // (null: the word is not listed, or no leaf may come next). With
  // `starts`, no leaf comes by its class: only the pieces in `starts` do.
  std::array<bool, kNumClasses> TagAllowedClasses(std::array<bool, kNumClasses> allowed,
                                                  const std::vector<int>* starts,
                                                  const State& state) const;
  const std::vector<int>* Lookup(absl::Span<const int> word) const {
    const auto found = leaf_starts_.find(word);
    if (found != leaf_starts_.end()) return found->second.empty() ? nullptr : &found->second;
    return unlisted_starts_.empty() ? nullptr : &unlisted_starts_;
  }

  // Words by their pieces, looked up by a span of the source (no copy).
  struct PiecesHash {
    using is_transparent = void;
    size_t operator()(absl::Span<const int> pieces) const {
      return absl::Hash<absl::Span<const int>>()(pieces);
    }
  };
  struct PiecesEqual {
    using is_transparent = void;
    bool operator()(absl::Span<const int> a, absl::Span<const int> b) const { return a == b; }
  };
  absl::flat_hash_map<std::vector<int>, std::vector<int>, PiecesHash, PiecesEqual> leaf_starts_;
  std::vector<int> unlisted_starts_;  // Sorted; empty: unlisted words are free.

  std::vector<uint8_t> class_of_;  // By id.
  // [class][BitRowWords(vocabulary)]: each class's tokens as bits.
  std::vector<uint32_t> class_tokens_;
  std::vector<bool> starts_word_;  // By id: the piece starts with "▁".
  int eos_id_ = 0;
  LeafRule::Kind leaf_kind_ = LeafRule::kChosen;
  bool forced_leaves_ = false;  // Leaves are forced (kSourceWords or kSpelled).
  std::vector<std::vector<int>> spellings_;
  std::vector<int64_t> spelled_before_;  // [i]: pieces of spellings 0..i-1.
  // Pieces of the cheapest way to spell a whole token from a token
  // boundary, and to finish one from a lone "▁" or a bare "(".
  int64_t leaf_cost_ = 0, close_cost_ = 0, open_cost_ = 0;
  int64_t leaf_after_space_ = 0, close_after_space_ = 0, open_after_space_ = 0;
  int64_t label_cost_ = 0;
};

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_TREE_CONSTRAINT_H_
