// The tree constraint in beam and greedy search over a random model whose
// vocabulary spells trees in whole and in split pieces: every output must be
// a well-formed linearised tree over exactly the source's words, checked
// here by an independent reading of the text the pieces spell.
#include "tasks/parsing/tree_constraint.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/bit_rows.h"
#include "runtime/decode/beam_search.h"
#include "runtime/decode/greedy_search.h"
#include "runtime/decode/scripted_model_testing.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using testing::kBos;
using testing::kEos;
using testing::kPad;
using testing::ScriptedModel;

// Ids 0-2 are the scripted model's pad, bos and eos.
const std::vector<std::string>& Pieces() {
  static const auto* pieces = new std::vector<std::string>{
      "<pad>", "<s>", "</s>", "<unk>",                          // 0-3
      "▁(S", "▁(NP", "▁(VP", "▁)S", "▁)NP", "▁)VP", "▁XX", "▁.",  // 4-11
      "▁(", "PP", "▁)", "▁", "(", "(ADJP", ")PP", "XX", "s",      // 12-20
      "▁the", "▁dog", "▁ba(d", "▁x▁y", ")", "ing",                // 21-26
  };
  return *pieces;
}
constexpr int kUnk = 3, kOpenS = 4, kOpenNp = 5, kCloseS = 7, kCloseNp = 8, kLeafXx = 10;
constexpr int kOpenBare = 12, kLabelPp = 13, kSpace = 15, kParen = 16, kTextS = 20, kThe = 21,
              kDog = 22, kBad = 23, kTwoWords = 24, kIng = 26;

std::unique_ptr<TreeConstraint> MakeConstraint(bool copy_words = false) {
  LeafRule leaves;
  if (copy_words) leaves.kind = LeafRule::kSourceWords;
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  EXPECT_TRUE(constraint.ok()) << constraint.status();
  return *std::move(constraint);
}

// The text SentencePiece decodes `ids` to: "▁" is a space, the first one
// dropped; specials decode to nothing.
std::string Spell(const std::vector<int>& ids) {
  std::string text;
  for (int id : ids) {
    if (id <= kUnk) continue;
    text += absl::StrReplaceAll(Pieces()[id], {{"▁", " "}});
  }
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

// Empty when `text` is a linearised tree over `words` leaves: one root,
// opens with a label, closes only of constituents that cover a word, no
// brackets inside tokens, nothing after the root. Else what is wrong.
std::string TreeProblem(const std::string& text, int words) {
  if (text.empty()) return "empty";
  std::vector<bool> open_has_word;
  int leaves = 0;
  bool root_closed = false;
  for (const std::string& token : std::vector<std::string>(absl::StrSplit(text, ' '))) {
    if (token.empty()) return "empty token";
    if (root_closed) return "token after the root: " + token;
    const bool bracket = token[0] == '(' || token[0] == ')';
    if (token.find_first_of("()", bracket ? 1 : 0) != std::string::npos) {
      return "bracket inside " + token;
    }
    if (token[0] == '(') {
      if (token.size() == 1) return "open without a label";
      if (open_has_word.empty() && leaves > 0) return "second root";
      open_has_word.push_back(false);
    } else if (token[0] == ')') {
      if (open_has_word.empty()) return "close with nothing open";
      if (!open_has_word.back()) return "constituent without words";
      open_has_word.pop_back();
      if (open_has_word.empty()) root_closed = true;
      else open_has_word.back() = true;
    } else {
      if (open_has_word.empty()) return "leaf outside the root";
      open_has_word.back() = true;
      ++leaves;
    }
  }
  if (!root_closed) return "root not closed";
  if (leaves != words) return "leaves " + std::to_string(leaves) + " != words " +
                              std::to_string(words);
  return "";
}

std::vector<std::vector<int>> Sources() {
  // Words: the pieces that start with "▁" (eos ends each source).
  return {{kThe, kDog, kTextS, kEos},                  // 2 words
          {kDog, kEos},                                // 1
          {kThe, kDog, kThe, kLeafXx, kDog, kDog, kEos},  // 6
          {kSpace, kTextS, kLabelPp, kThe, kEos},      // 2
          {kThe, kThe, kThe, kThe, kThe, kThe, kThe, kThe, kThe, kThe, kThe, kEos}};  // 11
}

// The leaves of linearised `text`, joined by spaces.
std::string Leaves(const std::string& text) {
  std::vector<std::string> leaves;
  for (const std::string& token : std::vector<std::string>(absl::StrSplit(text, ' '))) {
    if (!token.empty() && token[0] != '(' && token[0] != ')') leaves.push_back(token);
  }
  return absl::StrJoin(leaves, " ");
}

// With `expected_leaves`, the leaves must also be what it gives for the
// source.
void ExpectTrees(SearchStrategy& search, ScriptedModel& model, const TreeConstraint& constraint,
                 bool must_end,
                 std::function<std::string(const std::vector<int>&)> expected_leaves = nullptr) {
  const std::vector<std::vector<int>> sources = Sources();
  absl::StatusOr<std::vector<NBestList>> results = search.Search(model, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t s = 0; s < sources.size(); ++s) {
    const int words = constraint.CountWords(sources[s]);
    ASSERT_FALSE((*results)[s].empty());
    for (const Hypothesis& h : (*results)[s]) {
      if (!must_end && !h.ended) continue;  // Cut at the maximum length.
      EXPECT_TRUE(h.ended) << Spell(h.tokens);
      EXPECT_EQ(TreeProblem(Spell(h.tokens), words), "")
          << "source " << s << ": " << Spell(h.tokens);
      if (expected_leaves) {
        EXPECT_EQ(Leaves(Spell(h.tokens)), expected_leaves(sources[s])) << "source " << s;
      }
    }
  }
}

SearchOptions Options(int beam, int offset, const TreeConstraint* constraint) {
  SearchOptions options;
  options.beam_size = beam;
  options.nbest = beam > 1 ? 2 : 1;
  options.length_penalty_alpha = 0.3;
  options.max_length_offset = offset;
  options.batch_size = 2;
  options.constraint = constraint;
  return options;
}

// ExpectTrees for greedy search and beams 3 and 6 under random models,
// with eos shifts that make a model want to end at once or never, at each
// of `offsets` (maximum length = source + offset).
void ExpectTreesUnderRandomModels(
    const TreeConstraint& constraint, const std::vector<int>& offsets,
    std::function<std::string(const std::vector<int>&)> expected_leaves = nullptr) {
  const int vocab = static_cast<int>(Pieces().size());
  for (double eos_shift : {0.0, 20.0, -20.0}) {
    ScriptedModel model(vocab, /*eos_bias=*/0.3, eos_shift);
    for (int offset : offsets) {
      SCOPED_TRACE(::testing::Message() << "eos shift " << eos_shift << ", offset " << offset);
      GreedySearch greedy(Options(1, offset, &constraint));
      ExpectTrees(greedy, model, constraint, /*must_end=*/true, expected_leaves);
      for (int beam : {3, 6}) {
        BeamSearch search(Options(beam, offset, &constraint));
        ExpectTrees(search, model, constraint, /*must_end=*/true, expected_leaves);
      }
    }
  }
}

TEST(TreeConstraintTest, CountsWordsAsPiecesThatStartOne) {
  const auto constraint = MakeConstraint();
  const std::vector<int> expected = {2, 1, 6, 2, 11};
  for (size_t s = 0; s < Sources().size(); ++s) {
    EXPECT_EQ(constraint->CountWords(Sources()[s]), expected[s]);
  }
}

TEST(TreeConstraintTest, RandomModelsGiveWellFormedTreesOverTheWords) {
  const auto constraint = MakeConstraint();
  ExpectTreesUnderRandomModels(*constraint, {300, 8, 2});  // 2: exactly the shortest tree fits.
}

TEST(TreeConstraintTest, CopiedWordsGiveWellFormedTreesOverTheSourceWords) {
  const auto constraint = MakeConstraint(/*copy_words=*/true);
  ExpectTreesUnderRandomModels(*constraint, {300, 8, 2}, Spell);
}

// Leaf i spelled as kSpellings[i % 3]: whole, in two pieces, in two words'
// pieces glued ("theing").
std::vector<std::vector<int>> Spellings(int count) {
  const std::vector<std::vector<int>> kinds = {{kLeafXx}, {kSpace, 19}, {kThe, kIng}};
  std::vector<std::vector<int>> spellings;
  for (int i = 0; i < count; ++i) spellings.push_back(kinds[i % 3]);
  return spellings;
}

std::unique_ptr<TreeConstraint> MakeSpelledConstraint(int spellings) {
  LeafRule leaves;
  leaves.kind = LeafRule::kSpelled;
  leaves.spellings = Spellings(spellings);
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  EXPECT_TRUE(constraint.ok()) << constraint.status();
  return *std::move(constraint);
}

TEST(TreeConstraintTest, SpelledLeavesComeInOrderWhateverTheModelSays) {
  const auto constraint = MakeSpelledConstraint(12);
  const auto expected = [&](const std::vector<int>& source) {
    std::vector<int> pieces;
    const std::vector<std::vector<int>> spellings = Spellings(constraint->CountWords(source));
    for (const std::vector<int>& spelling : spellings) {
      pieces.insert(pieces.end(), spelling.begin(), spelling.end());
    }
    return Spell(pieces);
  };
  // Spellings may be longer than words: no offset of 2.
  ExpectTreesUnderRandomModels(*constraint, {300, 20}, expected);
}

TEST(TreeConstraintTest, SourcesWithMoreWordsThanSpellingsAreNotConstrained) {
  const auto constraint = MakeSpelledConstraint(2);
  ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.3);
  GreedySearch greedy(Options(1, 20, constraint.get()));
  // Two words: constrained; three: anything but the never pieces.
  const auto results = greedy.Search(model, {{kThe, kDog, kEos}, {kThe, kDog, kThe, kEos}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(TreeProblem(Spell((*results)[0][0].tokens), 2), "");
  // The three-word source decodes as under a constraint that only forbids
  // the never pieces.
  class NeverOnly : public DecodingConstraint {
   public:
    int state_size() const override { return 1; }
    int64_t vocabulary_size() const override { return static_cast<int64_t>(Pieces().size()); }
    void Start(absl::Span<const int>, int, int32_t*) const override {}
    void AllowedTokens(const int32_t*, absl::Span<const int>, uint32_t* allowed) const override {
      std::fill(allowed, allowed + BitRowWords(vocabulary_size()), 0u);
      for (int64_t token = 0; token < vocabulary_size(); ++token) {
        if (token != kPad && token != kBos && token != kUnk) BitRowSet(allowed, token);
      }
    }
    void Advance(int, absl::Span<const int>, int32_t*) const override {}
  } never_only;
  SearchOptions options = Options(1, 20, nullptr);
  options.constraint = &never_only;
  GreedySearch unconstrained_search(options);
  const auto unconstrained = unconstrained_search.Search(model, {{kThe, kDog, kThe, kEos}});
  ASSERT_TRUE(unconstrained.ok());
  EXPECT_EQ((*results)[1][0].tokens, (*unconstrained)[0][0].tokens);
  EXPECT_NE(TreeProblem(Spell((*results)[1][0].tokens), 3), "");
}

TEST(TreeConstraintTest, TooShortALimitKeepsTheBracketRules) {
  const auto constraint = MakeConstraint();
  ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.3);
  BeamSearch search(Options(4, /*offset=*/0, constraint.get()));
  ExpectTrees(search, model, *constraint, /*must_end=*/false);
}

TEST(TreeConstraintTest, BeamOfOneIsGreedyUnderTheConstraint) {
  const auto constraint = MakeConstraint();
  ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.2);
  GreedySearch greedy(Options(1, 50, constraint.get()));
  BeamSearch beam(Options(1, 50, constraint.get()));
  const auto a = greedy.Search(model, Sources());
  const auto b = beam.Search(model, Sources());
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t s = 0; s < a->size(); ++s) {
    EXPECT_EQ((*a)[s][0].tokens, (*b)[s][0].tokens);
    EXPECT_NEAR((*a)[s][0].log_prob, (*b)[s][0].log_prob, 1e-9);
  }
}

// Steps through one hypothesis by hand.
class Walk {
 public:
  Walk(const TreeConstraint& constraint, const std::vector<int>& source, int max_length)
      : constraint_(constraint), source_(source), state_(constraint.state_size()) {
    constraint.Start(source_, max_length, state_.data());
  }
  bool Allows(int token) const {
    // AllowedTokens' bits (what searches rank among) must agree with
    // Allows, token by token, over the whole vocabulary; and the bits past
    // it are clear.
    const int64_t vocabulary = static_cast<int64_t>(Pieces().size());
    EXPECT_EQ(constraint_.vocabulary_size(), vocabulary);
    std::vector<uint32_t> bits(BitRowWords(vocabulary), 0x5a5a5a5au);
    constraint_.AllowedTokens(state_.data(), source_, bits.data());
    for (int64_t t = 0; t < static_cast<int64_t>(bits.size()) * 32; ++t) {
      const bool allowed = t < vocabulary && constraint_.Allows(state_.data(), source_, t);
      EXPECT_EQ(BitRowHas(bits.data(), t), allowed) << "token " << t;
    }
    return constraint_.Allows(state_.data(), source_, token);
  }
  void Take(int token) {
    ASSERT_TRUE(Allows(token)) << Pieces()[token];
    constraint_.Advance(token, source_, state_.data());
  }

 private:
  const TreeConstraint& constraint_;
  std::vector<int> source_;
  std::vector<int32_t> state_;
};

TEST(TreeConstraintTest, FollowsTheTextAcrossSplitPieces) {
  const auto constraint = MakeConstraint();
  Walk walk(*constraint, {kThe, kDog, kEos}, 100);  // Two words.
  for (int never : {kPad, kBos, kUnk, kBad, kTwoWords}) EXPECT_FALSE(walk.Allows(never));
  EXPECT_FALSE(walk.Allows(kLeafXx));   // A leaf outside the root.
  EXPECT_FALSE(walk.Allows(kCloseS));   // Nothing open.
  EXPECT_FALSE(walk.Allows(kEos));
  EXPECT_FALSE(walk.Allows(kTextS));    // Text continues no token.
  walk.Take(kSpace);                    // "▁" "(" "PP": an open in three pieces.
  EXPECT_FALSE(walk.Allows(kSpace));
  walk.Take(kParen);
  EXPECT_FALSE(walk.Allows(kLeafXx));   // "(" needs its label first.
  EXPECT_FALSE(walk.Allows(kEos));
  walk.Take(kLabelPp);
  EXPECT_FALSE(walk.Allows(kCloseNp));  // The root covers no word yet.
  walk.Take(kOpenNp);
  walk.Take(kLeafXx);
  walk.Take(kTextS);                    // "XXs": the same leaf, longer.
  walk.Take(kOpenBare);                 // "▁(" "PP": one word is left for it.
  walk.Take(kLabelPp);
  walk.Take(kOpenNp);                   // Nested: both will cover the last word.
  walk.Take(kSpace);                    // "▁" "XX": a leaf in two pieces.
  walk.Take(19);
  EXPECT_FALSE(walk.Allows(kLeafXx));   // Every word has its leaf...
  EXPECT_FALSE(walk.Allows(kOpenNp));   // ...and none is left for a constituent.
  EXPECT_FALSE(walk.Allows(kEos));      // Four constituents are open.
  walk.Take(kCloseNp);
  walk.Take(kSpace);
  walk.Take(18);                        // ")PP"
  walk.Take(kCloseNp);
  walk.Take(14);                        // "▁)": closes the root, labels aside.
  EXPECT_FALSE(walk.Allows(kOpenS));    // One root only.
  EXPECT_FALSE(walk.Allows(kSpace));
  EXPECT_TRUE(walk.Allows(kEos));
}

TEST(TreeConstraintTest, ClosesTheRootOnlyOverEveryWord) {
  const auto constraint = MakeConstraint();
  Walk walk(*constraint, {kThe, kDog, kEos}, 100);
  walk.Take(kOpenS);
  walk.Take(kLeafXx);
  EXPECT_FALSE(walk.Allows(kCloseS));  // A word is left.
  walk.Take(kLeafXx);
  walk.Take(kCloseS);
  EXPECT_TRUE(walk.Allows(kEos));
}

TEST(TreeConstraintTest, LeavesRoomToFinishWithinTheMaximumLength) {
  const auto constraint = MakeConstraint();
  // Two words: the shortest tree, "(S XX XX )S" and eos, takes 5 steps.
  Walk roomy(*constraint, {kThe, kDog, kEos}, 7);
  roomy.Take(kOpenS);
  EXPECT_TRUE(roomy.Allows(kOpenNp));  // "(S (NP XX )NP XX )S" and eos: 7 steps.
  Walk walk(*constraint, {kThe, kDog, kEos}, 6);
  walk.Take(kOpenS);
  EXPECT_FALSE(walk.Allows(kOpenNp));  // 7 > 6.
  EXPECT_TRUE(walk.Allows(kSpace));    // "▁" "XX" "▁XX" "▁)S" and eos: 6.
  walk.Take(kLeafXx);
  walk.Take(kSpace);
  walk.Take(19);
  EXPECT_FALSE(walk.Allows(kSpace));   // "▁" ")PP" "▁)S" and eos: 7.
  EXPECT_TRUE(walk.Allows(kCloseS));
}

TEST(TreeConstraintTest, CopiesTheNextSourceWordPieceByPiece) {
  const auto constraint = MakeConstraint(/*copy_words=*/true);
  const std::vector<int> source = {kThe, kDog, kIng, kEos};  // "the doging"
  Walk walk(*constraint, source, 100);
  EXPECT_FALSE(walk.Allows(kThe));      // A leaf outside the root.
  walk.Take(kOpenS);
  EXPECT_FALSE(walk.Allows(kLeafXx));   // No leaf but the next word...
  EXPECT_FALSE(walk.Allows(kDog));      // ...which is "the".
  EXPECT_FALSE(walk.Allows(kCloseS));
  walk.Take(kThe);
  EXPECT_FALSE(walk.Allows(kTextS));    // "the" is whole: nothing extends it.
  EXPECT_FALSE(walk.Allows(kIng));
  walk.Take(kOpenNp);
  walk.Take(kDog);
  for (int token : {kCloseNp, kOpenNp, kDog, kTextS, kEos}) {
    EXPECT_FALSE(walk.Allows(token)) << Pieces()[token];  // "dog" goes on: "ing".
  }
  walk.Take(kIng);
  EXPECT_FALSE(walk.Allows(kThe));      // Every word is copied.
  EXPECT_FALSE(walk.Allows(kEos));
  walk.Take(kCloseNp);
  walk.Take(kCloseS);
  EXPECT_TRUE(walk.Allows(kEos));
}

TEST(TreeConstraintTest, CopiedWordsCountTheirPiecesAgainstTheMaximumLength) {
  const auto constraint = MakeConstraint(/*copy_words=*/true);
  const std::vector<int> source = {kThe, kDog, kIng, kEos};
  // "(S the dog ing )S" and eos: 6 steps.
  Walk tight(*constraint, source, 6);
  tight.Take(kOpenS);
  EXPECT_FALSE(tight.Allows(kOpenNp));  // 8 > 6.
  tight.Take(kThe);
  tight.Take(kDog);
  tight.Take(kIng);
  tight.Take(kCloseS);
  EXPECT_TRUE(tight.Allows(kEos));
  Walk roomy(*constraint, source, 8);
  roomy.Take(kOpenS);
  EXPECT_TRUE(roomy.Allows(kOpenNp));   // "(S (NP the dog ing )NP )S" and eos: 8.
}

// A tag dictionary: "the" (one piece) takes the leaf "XX", "dog" takes "."
// or "the"; "dog" + "s" and every other word are not listed.
std::unique_ptr<TreeConstraint> MakeTaggedConstraint() {
  constexpr int kDot = 11;
  LeafRule leaves;
  leaves.leaf_starts_by_word = {{{kThe}, {kLeafXx}}, {{kDog}, {kThe, kDot}}};
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  EXPECT_TRUE(constraint.ok()) << constraint.status();
  return *std::move(constraint);
}

// The words of `source` spelled, and the leaves the dictionary allows each
// ("" where any): "the" -> "XX", "dog" -> "." or "the".
std::vector<std::string> WordsOf(const std::vector<int>& source) {
  std::vector<std::string> words;
  for (int id : source) {
    if (id == kEos) break;
    const std::string piece = Pieces()[id];
    if (absl::StartsWith(piece, "▁")) words.emplace_back();
    if (!words.empty()) words.back() += piece;
  }
  return words;
}

// Searches `sources` with `strategy`, checks that every hypothesis is a
// tree with one leaf per word, and calls `check(word, leaf, text)` for each
// of its words.
void ForEachLeaf(
    SearchStrategy& strategy, IncrementalModel& model, const std::vector<std::vector<int>>& sources,
    const std::function<void(const std::string&, const std::string&, const std::string&)>& check) {
  absl::StatusOr<std::vector<NBestList>> results = strategy.Search(model, sources);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t s = 0; s < sources.size(); ++s) {
    const std::vector<std::string> words = WordsOf(sources[s]);
    for (const Hypothesis& h : (*results)[s]) {
      const std::string text = Spell(h.tokens);
      ASSERT_EQ(TreeProblem(text, static_cast<int>(words.size())), "") << text;
      const std::vector<std::string> leaves = absl::StrSplit(Leaves(text), ' ');
      ASSERT_EQ(leaves.size(), words.size()) << text;
      for (size_t w = 0; w < words.size(); ++w) check(words[w], leaves[w], text);
    }
  }
}

TEST(TreeConstraintTest, TagDictionaryGivesListedWordsOnlyTheirLeaves) {
  const auto constraint = MakeTaggedConstraint();
  const int vocab = static_cast<int>(Pieces().size());
  int listed = 0;
  for (double eos_shift : {0.0, 20.0, -20.0}) {
    ScriptedModel model(vocab, /*eos_bias=*/0.3, eos_shift);
    for (int beam : {1, 3, 6}) {
      SCOPED_TRACE(::testing::Message() << "eos shift " << eos_shift << ", beam " << beam);
      BeamSearch search(Options(beam, 300, constraint.get()));
      GreedySearch greedy(Options(1, 300, constraint.get()));
      SearchStrategy& strategy = beam == 1 ? static_cast<SearchStrategy&>(greedy) : search;
      ForEachLeaf(strategy, model, Sources(),
                  [&](const std::string& word, const std::string& leaf, const std::string& text) {
                    if (word == "▁the") {
                      EXPECT_EQ(leaf, "XX") << text;
                    } else if (word == "▁dog") {
                      EXPECT_TRUE(leaf == "." || leaf == "the") << leaf << " in " << text;
                    } else {
                      return;
                    }
                    ++listed;
                  });
    }
  }
  EXPECT_GT(listed, 100);
}

TEST(TreeConstraintTest, TagDictionaryLeavesOtherWordsFree) {
  // Unlisted words ("dog" + "s") take whatever leaf the model prefers: with
  // the dictionary and without, the same search gives the same leaf there.
  const auto tagged = MakeTaggedConstraint();
  const auto plain = MakeConstraint();
  ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.3);
  const std::vector<std::vector<int>> source = {{kDog, kTextS, kEos}};
  GreedySearch with_tags(Options(1, 300, tagged.get()));
  GreedySearch without(Options(1, 300, plain.get()));
  const auto a = with_tags.Search(model, source);
  const auto b = without.Search(model, source);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0][0].tokens, (*b)[0][0].tokens);
}

TEST(TreeConstraintTest, UnlistedLeafStartsBindWordsNotListed) {
  // The open classes: an unlisted word ("dog" + "s", "the" + "s") takes
  // only "." here, while "the" keeps its own "XX".
  constexpr int kDot = 11;
  LeafRule leaves;
  leaves.leaf_starts_by_word = {{{kThe}, {kLeafXx}}};
  leaves.unlisted_leaf_starts = {kDot};
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  ASSERT_TRUE(constraint.ok()) << constraint.status();
  const std::vector<std::vector<int>> sources = {
      {kDog, kTextS, kEos}, {kThe, kDog, kTextS, kEos}, {kThe, kTextS, kThe, kEos}};
  int unlisted = 0;
  for (double eos_shift : {0.0, 20.0}) {
    ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.3, eos_shift);
    for (int beam : {2, 4}) {
      BeamSearch search(Options(beam, 300, constraint->get()));
      ForEachLeaf(search, model, sources,
                  [&](const std::string& word, const std::string& leaf, const std::string& text) {
                    if (word == "▁the") {
                      EXPECT_EQ(leaf, "XX") << text;
                    } else {
                      EXPECT_EQ(leaf, ".") << word << " in " << text;
                      ++unlisted;
                    }
                  });
    }
  }
  EXPECT_GT(unlisted, 10);
  // An entry with no pieces keeps its word free: "dog" takes the leaf the
  // model prefers, as without any dictionary.
  LeafRule free_dog = leaves;
  free_dog.leaf_starts_by_word.push_back({{kDog}, {}});
  const auto with_free = TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, free_dog);
  ASSERT_TRUE(with_free.ok()) << with_free.status();
  const auto plain = MakeConstraint();
  ScriptedModel model(static_cast<int>(Pieces().size()), /*eos_bias=*/0.3);
  GreedySearch free_search(Options(1, 300, with_free->get()));
  GreedySearch plain_search(Options(1, 300, plain.get()));
  const std::vector<std::vector<int>> dog = {{kDog, kEos}};
  const auto a = free_search.Search(model, dog);
  const auto b = plain_search.Search(model, dog);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0][0].tokens, (*b)[0][0].tokens);
  EXPECT_NE(Leaves(Spell((*b)[0][0].tokens)), ".");  // Else the check proves nothing.
  // And they are checked like the dictionary's own pieces.
  leaves.unlisted_leaf_starts = {kOpenNp};
  const auto bad = TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  EXPECT_FALSE(bad.ok());
}

TEST(TreeConstraintTest, TagDictionaryOfPiecesThatAreNoLeafIsAnError) {
  LeafRule leaves;
  leaves.leaf_starts_by_word = {{{kThe}, {kOpenNp}}};
  const auto constraint = TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk}, leaves);
  EXPECT_FALSE(constraint.ok());
  EXPECT_NE(constraint.status().message().find("not a whole leaf piece"), std::string::npos);
}

TEST(TreeConstraintTest, VocabularyThatCannotSpellATreeIsAnError) {
  const auto constraint = TreeConstraint::Create({"<pad>", "<s>", "</s>", "▁(S", "▁XX"}, 2, {0, 1});
  EXPECT_FALSE(constraint.ok());
  EXPECT_NE(constraint.status().message().find("close"), std::string::npos);
}

}  // namespace
}  // namespace tfm
