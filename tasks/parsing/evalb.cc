#include "tasks/parsing/evalb.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tfm {
namespace {

// COLLINS.prm's DELETE_LABEL list.
bool IsDeletedLabel(const std::string& label) {
  return label == "TOP" || label == "-NONE-" || label == "," || label == ":" || label == "``" ||
         label == "''" || label == ".";
}

// EVALB's modify_label(): cut at the first '-' or '=', even at the start.
std::string ModifyLabel(const std::string& label) {
  return label.substr(0, label.find_first_of("-="));
}

// EQ_LABEL ADVP PRT: one name for both.
std::string CanonicalLabel(const std::string& label) { return label == "PRT" ? "ADVP" : label; }

struct Bracket {
  std::string label;
  int start;
  int end;
};

struct Sentence {
  std::vector<std::string> words;
  std::vector<std::string> tags;
  std::vector<Bracket> brackets;  // Only those EVALB counts.
};

// Walks the tree as EVALB reads its text: deleted leaves take no position,
// and each constituent spans the kept words under it.
void Collect(const Tree& tree, bool is_root, Sentence* out) {
  if (tree.is_leaf()) {
    if (IsDeletedLabel(tree.label)) return;
    out->words.push_back(tree.word);
    out->tags.push_back(tree.label);
    return;
  }
  const int start = static_cast<int>(out->words.size());
  for (const Tree& child : tree.children) Collect(child, /*is_root=*/false, out);
  const int end = static_cast<int>(out->words.size());
  if (is_root && (tree.label.empty() || tree.label == "TOP" || tree.label == "ROOT")) return;
  const std::string label = ModifyLabel(tree.label);
  if (start == end || IsDeletedLabel(label)) return;
  out->brackets.push_back({CanonicalLabel(label), start, end});
}

Sentence Read(const Tree& tree) {
  Sentence sentence;
  Collect(tree, /*is_root=*/true, &sentence);
  return sentence;
}

bool Crosses(const Bracket& gold, const Bracket& test) {
  return (gold.start < test.start && gold.end > test.start && gold.end < test.end) ||
         (gold.start > test.start && gold.start < test.end && gold.end > test.end);
}

void CountLeaves(const Tree& tree, int* count) {
  if (tree.is_leaf()) {
    if (tree.label != "-NONE-") ++*count;
    return;
  }
  for (const Tree& child : tree.children) CountLeaves(child, count);
}

std::string FormatTotals(const EvalbTotals& t) {
  const int64_t valid = t.valid_sentences();
  const auto per_sentence = [valid](int64_t count, double scale) {
    return valid > 0 ? scale * count / valid : 0.0;
  };
  std::string out;
  absl::StrAppendFormat(&out, "Number of sentence        = %6d\n", t.sentences);
  absl::StrAppendFormat(&out, "Number of Error sentence  = %6d\n", t.error_sentences);
  absl::StrAppendFormat(&out, "Number of Skip  sentence  = %6d\n", t.skip_sentences);
  absl::StrAppendFormat(&out, "Number of Valid sentence  = %6d\n", valid);
  absl::StrAppendFormat(&out, "Bracketing Recall         = %6.2f\n", t.recall());
  absl::StrAppendFormat(&out, "Bracketing Precision      = %6.2f\n", t.precision());
  absl::StrAppendFormat(&out, "Bracketing FMeasure       = %6.2f\n", t.f1());
  absl::StrAppendFormat(&out, "Complete match            = %6.2f\n",
                        per_sentence(t.complete_match, 100.0));
  absl::StrAppendFormat(&out, "Average crossing          = %6.2f\n", per_sentence(t.crossing, 1.0));
  absl::StrAppendFormat(&out, "No crossing               = %6.2f\n",
                        per_sentence(t.no_crossing, 100.0));
  absl::StrAppendFormat(&out, "2 or less crossing        = %6.2f\n",
                        per_sentence(t.two_or_less_crossing, 100.0));
  absl::StrAppendFormat(&out, "Tagging accuracy          = %6.2f\n",
                        t.words > 0 ? 100.0 * t.correct_tags / t.words : 0.0);
  return out;
}

}  // namespace

int EvalbLength(const Tree& gold) {
  int count = 0;
  CountLeaves(gold, &count);
  return count;
}

EvalbSentence EvalbSkipSentence(int length) {
  EvalbSentence sentence;
  sentence.status = EvalbStatus::kSkip;
  sentence.length = length;
  return sentence;
}

EvalbSentence EvalbErrorSentence(int length, std::string error) {
  EvalbSentence sentence;
  sentence.status = EvalbStatus::kError;
  sentence.length = length;
  sentence.error = std::move(error);
  return sentence;
}

EvalbSentence EvalbScoreTrees(const Tree& gold_tree, const Tree& test_tree) {
  const int length = EvalbLength(gold_tree);
  const Sentence gold = Read(gold_tree);
  const Sentence test = Read(test_tree);
  // The checks in EVALB's order.
  if (test.words.empty()) return EvalbSkipSentence(length);
  if (gold.words.size() != test.words.size()) {
    return EvalbErrorSentence(
        length, absl::StrCat("Length unmatch (", gold.words.size(), "|", test.words.size(), ")"));
  }
  for (size_t i = 0; i < gold.words.size(); ++i) {
    if (gold.words[i] != test.words[i]) {
      return EvalbErrorSentence(
          length, absl::StrCat("Words unmatch (", gold.words[i], "|", test.words[i], ")"));
    }
  }
  EvalbSentence result;
  result.length = length;
  result.gold_brackets = static_cast<int>(gold.brackets.size());
  result.test_brackets = static_cast<int>(test.brackets.size());
  result.words = static_cast<int>(gold.words.size());

  std::map<std::tuple<std::string, int, int>, int> unmatched_gold;
  for (const Bracket& b : gold.brackets) ++unmatched_gold[{b.label, b.start, b.end}];
  for (const Bracket& b : test.brackets) {
    auto it = unmatched_gold.find({b.label, b.start, b.end});
    if (it != unmatched_gold.end() && it->second > 0) {
      --it->second;
      ++result.matched;
    }
  }
  for (const Bracket& t : test.brackets) {
    for (const Bracket& g : gold.brackets) {
      if (Crosses(g, t)) {
        ++result.crossing;
        break;
      }
    }
  }
  for (size_t i = 0; i < gold.tags.size(); ++i) {
    if (CanonicalLabel(gold.tags[i]) == CanonicalLabel(test.tags[i])) ++result.correct_tags;
  }
  return result;
}

void EvalbTotals::Add(const EvalbSentence& s) {
  ++sentences;
  if (s.status == EvalbStatus::kError) {
    ++error_sentences;
    return;
  }
  if (s.status == EvalbStatus::kSkip) {
    ++skip_sentences;
    return;
  }
  gold_brackets += s.gold_brackets;
  test_brackets += s.test_brackets;
  matched += s.matched;
  if (s.gold_brackets == s.test_brackets && s.test_brackets == s.matched) ++complete_match;
  words += s.words;
  crossing += s.crossing;
  if (s.crossing == 0) ++no_crossing;
  if (s.crossing <= 2) ++two_or_less_crossing;
  correct_tags += s.correct_tags;
}

double EvalbTotals::recall() const {
  return gold_brackets > 0 ? 100.0 * matched / gold_brackets : 0.0;
}

double EvalbTotals::precision() const {
  return test_brackets > 0 ? 100.0 * matched / test_brackets : 0.0;
}

double EvalbTotals::f1() const {
  const double p = precision();
  const double r = recall();
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}

void EvalbScorer::Add(const EvalbSentence& sentence) {
  all_.Add(sentence);
  if (sentence.length <= kEvalbCutoffLength) short_.Add(sentence);
}

std::string EvalbScorer::Format() const {
  return absl::StrCat("=== Summary ===\n\n-- All --\n", FormatTotals(all_), "\n-- len<=",
                      kEvalbCutoffLength, " --\n", FormatTotals(short_), "\n",
                      absl::StrFormat("Bracketing: matched %d, gold %d, test %d\n", all_.matched,
                                      all_.gold_brackets, all_.test_brackets),
                      absl::StrFormat("Precision = %.2f\nRecall = %.2f\nF1 = %.2f\n",
                                      all_.precision(), all_.recall(), all_.f1()));
}

}  // namespace tfm
