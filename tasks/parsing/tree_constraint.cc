#include "tasks/parsing/tree_constraint.h"

#include <algorithm>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "core/bit_rows.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// SentencePiece's word-boundary mark, U+2581.
constexpr absl::string_view kWordMark = "\xE2\x96\x81";

// Far above any length, yet sums and small multiples stay in range.
constexpr int64_t kNoCompletion = int64_t{1} << 40;

// Where the text spelled so far stands within a token.
enum Lex : int32_t {
  kBegin,        // Nothing written yet.
  kTokenStart,   // A lone "▁": a token starts, nothing of it yet.
  kOpenNoLabel,  // "(" without a label yet.
  kComplete,     // A whole token (open with a label, close, or leaf).
  kInWord,       // Forced leaves: a leaf with pieces still to come.
  kWordDone,     // Forced leaves: a whole leaf (no text may extend it).
};

bool AtBoundary(int32_t lex) { return lex == kBegin || lex == kComplete || lex == kWordDone; }

enum Flags : int32_t {
  kHasWord = 1,     // The innermost open constituent covers a word.
  kStarted = 2,     // The root has opened.
  kLengthRule = 4,  // The tree must fit in max_length.
  kOff = 8,         // A source without words: nothing is constrained.
  kTagged = 16,     // The last piece was a whole leaf from the tag dictionary:
                    // no text may extend it.
};

bool HasBracket(absl::string_view text) {
  return text.find_first_of("()") != absl::string_view::npos;
}

}  // namespace

TreeConstraint::PieceClass TreeConstraint::ClassifyPiece(absl::string_view piece) {
  const bool space = absl::ConsumePrefix(&piece, kWordMark);
  if (absl::StrContains(piece, kWordMark)) return TreeConstraint::kNever;
  if (piece.empty()) return space ? TreeConstraint::kSpace : TreeConstraint::kNever;
  const absl::string_view rest = piece.substr(1);
  if (HasBracket(rest)) return TreeConstraint::kNever;
  if (piece[0] == '(') {
    if (space) return rest.empty() ? TreeConstraint::kOpenBare : TreeConstraint::kOpenLabeled;
    return rest.empty() ? TreeConstraint::kContinueOpenBare : TreeConstraint::kContinueOpenLabeled;
  }
  if (piece[0] == ')') return space ? TreeConstraint::kClose : TreeConstraint::kContinueClose;
  if (space) return TreeConstraint::kLeaf;
  const bool capitals = std::all_of(piece.begin(), piece.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  return capitals ? TreeConstraint::kContinueLabel : TreeConstraint::kContinueText;
}

struct TreeConstraint::State {
  int32_t values[kStateSize];

  explicit State(const int32_t* from) { std::copy(from, from + kStateSize, values); }
  int32_t& operator[](int i) { return values[i]; }
  int32_t operator[](int i) const { return values[i]; }
  bool flag(int32_t f) const { return (values[kFlags] & f) != 0; }
  void set_flag(int32_t f, bool on) { values[kFlags] = on ? values[kFlags] | f : values[kFlags] & ~f; }
};

absl::StatusOr<std::unique_ptr<TreeConstraint>> TreeConstraint::Create(
    const std::vector<std::string>& pieces, int eos_id, const std::vector<int>& never_ids,
    LeafRule leaves) {
  const int size = static_cast<int>(pieces.size());
  if (eos_id < 0 || eos_id >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("tree constraint: eos id ", eos_id, " outside a vocabulary of ", size));
  }
  std::unique_ptr<TreeConstraint> constraint(new TreeConstraint());
  constraint->eos_id_ = eos_id;
  const bool forced_leaves = leaves.kind != LeafRule::kChosen;
  constraint->leaf_kind_ = leaves.kind;
  constraint->forced_leaves_ = forced_leaves;
  constraint->spelled_before_.assign(1, 0);
  for (const std::vector<int>& spelling : leaves.spellings) {
    if (spelling.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tree constraint: leaf ", constraint->spellings_.size(),
                       " has an empty spelling"));
    }
    for (int id : spelling) {
      if (id < 0 || id >= size) {
        return absl::InvalidArgumentError(absl::StrCat("tree constraint: leaf spelling id ", id,
                                                       " outside a vocabulary of ", size));
      }
    }
    constraint->spelled_before_.push_back(constraint->spelled_before_.back() +
                                          static_cast<int64_t>(spelling.size()));
    constraint->spellings_.push_back(spelling);
  }
  // A dictionary's leaf starts, sorted, each a whole leaf piece.
  const auto checked_starts =
      [&](const std::vector<int>& starts) -> absl::StatusOr<std::vector<int>> {
    if (leaves.kind != LeafRule::kChosen) {
      return absl::InvalidArgumentError(
          "tree constraint: a tag dictionary is for leaves the model chooses");
    }
    std::vector<int> sorted = starts;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (int id : sorted) {
      if (id < 0 || id >= size || id == eos_id ||
          ClassifyPiece(pieces[id]) != kLeaf ||
          std::find(never_ids.begin(), never_ids.end(), id) != never_ids.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tree constraint: tag dictionary piece id ", id,
            " is not a whole leaf piece of a vocabulary of ", size));
      }
    }
    return sorted;
  };
  for (const auto& [word, starts] : leaves.leaf_starts_by_word) {
    TFM_ASSIGN_OR_RETURN(std::vector<int> sorted, checked_starts(starts));
    if (word.empty()) continue;
    constraint->leaf_starts_[word] = std::move(sorted);
  }
  if (!leaves.unlisted_leaf_starts.empty()) {
    TFM_ASSIGN_OR_RETURN(constraint->unlisted_starts_, checked_starts(leaves.unlisted_leaf_starts));
  }
  constraint->class_of_.resize(size);
  constraint->starts_word_.resize(size);
  bool have[kNumClasses] = {};
  for (int id = 0; id < size; ++id) {
    PieceClass piece_class = ClassifyPiece(pieces[id]);
    const bool never = std::find(never_ids.begin(), never_ids.end(), id) != never_ids.end();
    if (id == eos_id) piece_class = kEnd;
    if (never) piece_class = kNever;
    constraint->class_of_[id] = piece_class;
    // With forced leaves, source words may hold any text, brackets included:
    // every piece that starts with "▁" starts one.
    const bool special = id == eos_id || never;
    constraint->starts_word_[id] = forced_leaves
                                       ? !special && absl::StartsWith(pieces[id], kWordMark)
                                       : StartsToken(piece_class);
    have[piece_class] = true;
  }
  // Each class's tokens as bits: a row of allowed tokens is the union of
  // its allowed classes' rows.
  const int64_t words = BitRowWords(size);
  constraint->class_tokens_.assign(static_cast<size_t>(kNumClasses) * words, 0u);
  for (int id = 0; id < size; ++id) {
    BitRowSet(constraint->class_tokens_.data() + constraint->class_of_[id] * words, id);
  }
  // One piece when the vocabulary has it, else the parts it is spelled in.
  const auto one = [&](PieceClass c) { return have[c] ? int64_t{1} : kNoCompletion; };
  TreeConstraint& c = *constraint;
  c.label_cost_ = std::min(one(kContinueText), one(kContinueLabel));
  c.leaf_after_space_ = c.label_cost_;
  c.close_after_space_ = one(kContinueClose);
  c.open_after_space_ = std::min(one(kContinueOpenLabeled), one(kContinueOpenBare) + c.label_cost_);
  c.leaf_cost_ = std::min(one(kLeaf), one(kSpace) + c.leaf_after_space_);
  c.close_cost_ = std::min(one(kClose), one(kSpace) + c.close_after_space_);
  c.open_cost_ = std::min({one(kOpenLabeled), one(kOpenBare) + c.label_cost_,
                           one(kSpace) + c.open_after_space_});
  if (forced_leaves) {
    // Brackets only as "▁(NP", "▁(" "NP", "▁)" ["NP"].
    if (!have[kClose] || !(have[kOpenLabeled] || (have[kOpenBare] && have[kContinueLabel]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tree constraint: the vocabulary of ", size,
          " pieces cannot write brackets as forced-leaf trees need them (\"▁(NP\" or \"▁(\" and "
          "a capitalised label \"NP\", and \"▁)\")"));
    }
    c.label_cost_ = one(kContinueLabel);
    c.close_cost_ = 1;
    c.open_cost_ = std::min(one(kOpenLabeled), one(kOpenBare) + c.label_cost_);
  } else if (c.leaf_cost_ >= kNoCompletion || c.close_cost_ >= kNoCompletion ||
             c.open_cost_ >= kNoCompletion) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tree constraint: the vocabulary of ", size,
        " pieces cannot spell linearised trees (it needs pieces for an open \"(LABEL\", a close "
        "\")LABEL\" and a leaf \"XX\", whole or in parts)"));
  }
  return constraint;
}

int TreeConstraint::CountWords(absl::Span<const int> source) const {
  int words = 0;
  for (int id : source) {
    if (StartsWord(id)) ++words;
  }
  return words;
}

void TreeConstraint::Start(absl::Span<const int> source, int max_length, int32_t* values) const {
  std::fill(values, values + kStateSize, 0);
  values[kLex] = kBegin;
  values[kWords] = CountWords(source);
  values[kMaxLength] = max_length;
  // The words run from the first piece that starts one to the eos.
  int end = static_cast<int>(source.size());
  if (end > 0 && source[end - 1] == eos_id_) --end;
  int cursor = 0;
  while (cursor < end && !StartsWord(source[cursor])) ++cursor;
  values[kCursor] = leaf_kind_ == LeafRule::kSpelled ? 0 : cursor;
  values[kWordsEnd] = end;
  State state(values);
  if (state[kWords] == 0 ||
      (leaf_kind_ == LeafRule::kSpelled && state[kWords] >= static_cast<int>(spelled_before_.size()))) {
    state.set_flag(kOff, true);
  } else if (CompletionCost(state) <= max_length) {
    state.set_flag(kLengthRule, true);
  }
  std::copy(state.values, state.values + kStateSize, values);
}

bool TreeConstraint::Apply(PieceClass piece_class, State& state) const {
  enum Event { kNone, kOpens, kCloses, kLeafs };
  // Forced leaves: the model writes brackets, their capitalised labels and
  // eos; the leaves come from ApplyCopy. (Text that is no label is where a
  // model still learning to copy would put the word it wants: "(NP" "ing".)
  if (forced_leaves_ && piece_class != kOpenLabeled && piece_class != kOpenBare &&
      piece_class != kClose && piece_class != kContinueLabel && piece_class != kEnd) {
    return false;
  }
  const int32_t lex = state[kLex];
  const bool boundary = AtBoundary(lex);
  int32_t next = kComplete;
  Event event = kNone;
  switch (piece_class) {
    case kSpace:
      if (!boundary) return false;
      next = kTokenStart;
      break;
    case kOpenBare:
    case kOpenLabeled:
      if (!boundary) return false;
      next = piece_class == kOpenBare ? kOpenNoLabel : kComplete;
      event = kOpens;
      break;
    case kClose:
    case kLeaf:
      if (!boundary) return false;
      event = piece_class == kClose ? kCloses : kLeafs;
      break;
    case kContinueOpenBare:
    case kContinueOpenLabeled:
      if (lex != kTokenStart) return false;
      next = piece_class == kContinueOpenBare ? kOpenNoLabel : kComplete;
      event = kOpens;
      break;
    case kContinueClose:
      if (lex != kTokenStart) return false;
      event = kCloses;
      break;
    case kContinueText:
    case kContinueLabel:
      if (lex == kBegin || lex == kWordDone) return false;
      if (lex == kTokenStart) event = kLeafs;  // Else more of the token's text.
      break;
    case kEnd:
      return (lex == kComplete || lex == kWordDone) && state.flag(kStarted) && state[kDepth] == 0 &&
             state[kLeaves] == state[kWords];
    default:
      return false;
  }
  const int32_t depth = state[kDepth];
  const bool word_left = state[kLeaves] < state[kWords];
  switch (event) {
    case kOpens:
      if (depth >= kMaxDepth) return false;
      if (depth == 0 ? state.flag(kStarted) : !word_left) return false;
      state[kDepth] = depth + 1;
      state.set_flag(kStarted, true);
      state.set_flag(kHasWord, false);
      break;
    case kCloses:
      if (depth == 0 || !state.flag(kHasWord) || (depth == 1 && word_left)) return false;
      state[kDepth] = depth - 1;
      state.set_flag(kHasWord, true);  // The parent now covers the closed child's words.
      break;
    case kLeafs:
      if (forced_leaves_ || depth == 0 || !word_left) return false;  // Copies come from ApplyCopy.
      ++state[kLeaves];
      state.set_flag(kHasWord, true);
      break;
    case kNone:
      break;
  }
  state[kLex] = next;
  ++state[kTaken];
  return true;
}

int64_t TreeConstraint::LeavesCost(const State& state) const {
  if (leaf_kind_ == LeafRule::kSourceWords) return state[kWordsEnd] - state[kCursor];
  if (leaf_kind_ == LeafRule::kSpelled) {
    // The current leaf's pieces left, then the leaves still to start.
    const int32_t leaves = state[kLeaves];
    int64_t pieces = spelled_before_[state[kWords]] - spelled_before_[leaves];
    if (state[kLex] == kInWord) pieces += static_cast<int64_t>(spellings_[leaves - 1].size()) - state[kCursor];
    return pieces;
  }
  return int64_t{state[kWords] - state[kLeaves]} * leaf_cost_;
}

int64_t TreeConstraint::CompletionCost(const State& state) const {
  const int64_t left = state[kWords] - state[kLeaves];
  const int64_t depth = state[kDepth];
  const int32_t lex = state[kLex];
  const int64_t leaves = LeavesCost(state);
  if (!state.flag(kStarted)) {
    // The root still to open, over every word.
    if (left < 1) return kNoCompletion;
    const int64_t open = lex == kBegin        ? open_cost_
                         : lex == kTokenStart ? open_after_space_
                                              : kNoCompletion;
    return open + leaves + close_cost_ + 1;
  }
  // Then: the leaves left (each where the text stands), the closes, eos.
  switch (lex) {
    case kOpenNoLabel:
      return label_cost_ + leaves + depth * close_cost_ + 1;
    case kComplete:
    case kWordDone:
    case kInWord:  // The copied word's pieces left are among the leaves'.
      if (depth == 0) return left == 0 ? 1 : kNoCompletion;
      return leaves + depth * close_cost_ + 1;
    case kTokenStart: {
      // The started token must become a leaf (unless leaves are forced), a close
      // or an open.
      int64_t best = kNoCompletion;
      if (!forced_leaves_ && depth >= 1 && left >= 1) {
        best = leaf_after_space_ + (left - 1) * leaf_cost_ + depth * close_cost_ + 1;
      }
      if (depth >= 1 && state.flag(kHasWord) && (depth > 1 || left == 0)) {
        best = std::min(best, close_after_space_ + leaves + (depth - 1) * close_cost_ + 1);
      }
      if (depth >= 1 && depth < kMaxDepth && left >= 1) {
        best = std::min(best, open_after_space_ + leaves + (depth + 1) * close_cost_ + 1);
      }
      return best;
    }
    default:
      return kNoCompletion;
  }
}

bool TreeConstraint::CopyAllowed(const State& state, absl::Span<const int> source) const {
  if (!forced_leaves_ || state.flag(kOff)) return false;
  if (state[kLex] == kInWord) return true;
  if (leaf_kind_ == LeafRule::kSourceWords && state[kCursor] >= state[kWordsEnd]) return false;
  if (!AtBoundary(state[kLex]) || state[kDepth] == 0 || state[kLeaves] >= state[kWords]) {
    return false;
  }
  if (!state.flag(kLengthRule)) return true;
  // After its first piece, the rest of the leaves, the closes and eos must
  // still fit.
  State next = state;
  ApplyCopy(source, next);
  return next[kTaken] + CompletionCost(next) <= next[kMaxLength];
}

int TreeConstraint::ForcedPiece(const State& state, absl::Span<const int> source) const {
  if (leaf_kind_ == LeafRule::kSourceWords) return source[state[kCursor]];
  const int32_t leaf = state[kLex] == kInWord ? state[kLeaves] - 1 : state[kLeaves];
  return spellings_[leaf][state[kCursor]];
}

void TreeConstraint::ApplyCopy(absl::Span<const int> source, State& state) const {
  if (state[kLex] != kInWord) {
    ++state[kLeaves];
    state.set_flag(kHasWord, true);
  }
  const int32_t next = ++state[kCursor];
  if (leaf_kind_ == LeafRule::kSourceWords) {
    state[kLex] = next < state[kWordsEnd] && !StartsWord(source[next]) ? kInWord : kWordDone;
  } else if (next < static_cast<int32_t>(spellings_[state[kLeaves] - 1].size())) {
    state[kLex] = kInWord;
  } else {
    state[kLex] = kWordDone;
    state[kCursor] = 0;
  }
  ++state[kTaken];
}

std::array<bool, TreeConstraint::kNumClasses> TreeConstraint::AllowedClasses(
    const int32_t* values) const {
  std::array<bool, kNumClasses> allowed{};
  const State state(values);
  for (int c = 0; c < kNumClasses; ++c) {
    const PieceClass piece_class = static_cast<PieceClass>(c);
    if (state.flag(kOff)) {
      allowed[c] = piece_class != kNever;
      continue;
    }
    State next = state;
    if (!Apply(piece_class, next)) continue;
    if (piece_class == kEnd) {
      allowed[c] = true;
      continue;
    }
    // Never into a dead end; with the length rule, the tree still fits.
    const int64_t cost = CompletionCost(next);
    allowed[c] = cost < kNoCompletion &&
                 (!next.flag(kLengthRule) || next[kTaken] + cost <= next[kMaxLength]);
  }
  return allowed;
}

const std::vector<int>* TreeConstraint::LeafStarts(const State& state,
                                                   absl::Span<const int> source) const {
  if ((leaf_starts_.empty() && unlisted_starts_.empty()) || forced_leaves_ || state.flag(kOff)) {
    return nullptr;
  }
  // Word state[kLeaves] runs from its starting piece to the next word's.
  const int end = std::min(static_cast<int>(source.size()), state[kWordsEnd]);
  int words = -1, begin = -1;
  for (int i = 0; i < end; ++i) {
    if (!StartsWord(source[i])) continue;
    if (begin >= 0) return Lookup(source.subspan(begin, i - begin));
    if (++words == state[kLeaves]) begin = i;
  }
  return begin >= 0 ? Lookup(source.subspan(begin, end - begin)) : nullptr;
}

std::array<bool, TreeConstraint::kNumClasses> TreeConstraint::TagAllowedClasses(
    std::array<bool, kNumClasses> allowed, const std::vector<int>* starts,
    const State& state) const {
  // A tag is one whole piece: nothing extends it ...
  if (state.flag(kTagged)) allowed[kContinueText] = allowed[kContinueLabel] = false;
  // ... and it is one of the word's (a lone "▁" could start a leaf in parts).
  if (starts != nullptr) allowed[kSpace] = allowed[kLeaf] = false;
  return allowed;
}

void TreeConstraint::AllowedTokens(const int32_t* values, absl::Span<const int> source,
                                   uint32_t* allowed_tokens) const {
  const State state(values);
  const bool copy = CopyAllowed(state, source);
  const int64_t words = BitRowWords(vocabulary_size());
  std::fill(allowed_tokens, allowed_tokens + words, 0u);
  if (!(copy && state[kLex] == kInWord)) {
    const std::array<bool, kNumClasses> allowed = AllowedClasses(values);
    const std::vector<int>* starts = allowed[kLeaf] ? LeafStarts(state, source) : nullptr;
    const std::array<bool, kNumClasses> by_class = TagAllowedClasses(allowed, starts, state);
    for (int c = 0; c < kNumClasses; ++c) {
      if (!by_class[c]) continue;
      const uint32_t* tokens = class_tokens_.data() + c * words;
      for (int64_t w = 0; w < words; ++w) allowed_tokens[w] |= tokens[w];
    }
    if (starts != nullptr) {
      for (int token : *starts) BitRowSet(allowed_tokens, token);  // Leaf pieces all.
    }
  }
  if (copy) BitRowSet(allowed_tokens, ForcedPiece(state, source));
}

bool TreeConstraint::Allows(const int32_t* values, absl::Span<const int> source, int token) const {
  if (token < 0 || token >= static_cast<int>(class_of_.size())) return false;
  const State state(values);
  if (CopyAllowed(state, source) && token == ForcedPiece(state, source)) return true;
  if (forced_leaves_ && state[kLex] == kInWord) return false;
  const std::array<bool, kNumClasses> allowed = AllowedClasses(values);
  const std::vector<int>* starts = allowed[kLeaf] ? LeafStarts(state, source) : nullptr;
  const int piece_class = class_of_[token];
  if (TagAllowedClasses(allowed, starts, state)[piece_class]) return true;
  // Under a tag, the word's leaf pieces.
  return piece_class == kLeaf && starts != nullptr &&
         std::binary_search(starts->begin(), starts->end(), token);
}

void TreeConstraint::Advance(int token, absl::Span<const int> source, int32_t* values) const {
  State state(values);
  if (state.flag(kOff) || token < 0 || token >= static_cast<int>(class_of_.size())) return;
  if (CopyAllowed(state, source) && token == ForcedPiece(state, source)) {
    ApplyCopy(source, state);
  } else if (state[kLex] != kInWord) {
    const PieceClass piece_class = static_cast<PieceClass>(class_of_[token]);
    const bool tagged = piece_class == kLeaf && LeafStarts(state, source) != nullptr;
    if (Apply(piece_class, state)) state.set_flag(kTagged, tagged);
  }
  std::copy(state.values, state.values + kStateSize, values);
}

}  // namespace tfm
