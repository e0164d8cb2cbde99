// The tree constraint in beam and greedy search over a random model whose
// vocabulary spells trees in whole and in split pieces: every output must be
// a well-formed linearised tree over exactly the source's words, checked
// here by an independent reading of the text the pieces spell.
#include "core/decode/tree_constraint.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/decode/beam_search.h"
#include "core/decode/greedy_search.h"
#include "core/decode/scripted_model_testing.h"
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
      "▁the", "▁dog", "▁ba(d", "▁x▁y", ")",                       // 21-25
  };
  return *pieces;
}
constexpr int kUnk = 3, kOpenS = 4, kOpenNp = 5, kCloseS = 7, kCloseNp = 8, kLeafXx = 10;
constexpr int kOpenBare = 12, kLabelPp = 13, kSpace = 15, kParen = 16, kTextS = 20, kThe = 21,
              kDog = 22, kBad = 23, kTwoWords = 24;

std::unique_ptr<TreeConstraint> MakeConstraint() {
  absl::StatusOr<std::unique_ptr<TreeConstraint>> constraint =
      TreeConstraint::Create(Pieces(), kEos, {kPad, kBos, kUnk});
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

void ExpectTrees(SearchStrategy& search, ScriptedModel& model, const TreeConstraint& constraint,
                 bool must_end) {
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

TEST(TreeConstraintTest, CountsWordsAsPiecesThatStartOne) {
  const auto constraint = MakeConstraint();
  const std::vector<int> expected = {2, 1, 6, 2, 11};
  for (size_t s = 0; s < Sources().size(); ++s) {
    EXPECT_EQ(constraint->CountWords(Sources()[s]), expected[s]);
  }
}

TEST(TreeConstraintTest, RandomModelsGiveWellFormedTreesOverTheWords) {
  const auto constraint = MakeConstraint();
  const int vocab = static_cast<int>(Pieces().size());
  // eos shifts: a model that wants to end at once, one that never wants to.
  for (double eos_shift : {0.0, 20.0, -20.0}) {
    ScriptedModel model(vocab, /*eos_bias=*/0.3, eos_shift);
    for (int offset : {300, 8, 2}) {  // 2: exactly the shortest tree fits.
      SCOPED_TRACE(::testing::Message() << "eos shift " << eos_shift << ", offset " << offset);
      GreedySearch greedy(Options(1, offset, constraint.get()));
      ExpectTrees(greedy, model, *constraint, /*must_end=*/true);
      for (int beam : {3, 6}) {
        BeamSearch search(Options(beam, offset, constraint.get()));
        ExpectTrees(search, model, *constraint, /*must_end=*/true);
      }
    }
  }
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
      : constraint_(constraint), state_(constraint.state_size()) {
    constraint.Start(source, max_length, state_.data());
  }
  bool Allows(int token) const { return constraint_.Allows(state_.data(), token); }
  void Take(int token) {
    ASSERT_TRUE(Allows(token)) << Pieces()[token];
    constraint_.Advance(token, state_.data());
  }

 private:
  const TreeConstraint& constraint_;
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

TEST(TreeConstraintTest, VocabularyThatCannotSpellATreeIsAnError) {
  const auto constraint = TreeConstraint::Create({"<pad>", "<s>", "</s>", "▁(S", "▁XX"}, 2, {0, 1});
  EXPECT_FALSE(constraint.ok());
  EXPECT_NE(constraint.status().message().find("close"), std::string::npos);
}

}  // namespace
}  // namespace tfm
