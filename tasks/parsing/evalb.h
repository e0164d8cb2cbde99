// Labeled bracket scores exactly as EVALB (Sekine & Collins 1997) computes
// them with the standard COLLINS.prm parameters:
//  - leaves tagged TOP, -NONE-, "," ":" "``" "''" "." are deleted before
//    anything is counted (DELETE_LABEL), so brackets span the other words;
//  - constituent labels lose everything from the first '-' or '=' on,
//    brackets covering no remaining word or labeled with a DELETE_LABEL are
//    ignored, and ADVP and PRT count as the same label (EQ_LABEL);
//  - a bracket is (label, start, end); matches are counted as a multiset;
//  - a test tree with no words is a "skip" sentence; different word counts
//    ("Length unmatch") or different words ("Words unmatch") make an "error"
//    sentence; neither adds to the bracket counts;
//  - the cut-off statistics use sentences of at most 40 words, counting all
//    words but -NONE- (DELETE_LABEL_FOR_LENGTH).
// Differences, all for inputs EVALB handles badly: the root is ignored when
// labeled "" (the "( (S ...) )" wrapper, which EVALB would count as a
// bracket labeled ""), TOP or ROOT; F1 is 0 where EVALB prints nan
// (precision and recall both 0); and there is no MAX_ERROR limit (EVALB
// exits without a summary after 10 errors).
#ifndef TFM_TASKS_PARSING_EVALB_H_
#define TFM_TASKS_PARSING_EVALB_H_

#include <cstdint>
#include <string>

#include "tasks/parsing/tree.h"

namespace tfm {

inline constexpr int kEvalbCutoffLength = 40;

enum class EvalbStatus { kOk = 0, kError = 1, kSkip = 2 };

struct EvalbSentence {
  EvalbStatus status = EvalbStatus::kOk;
  std::string error;   // Why, for kError: "Length unmatch (12|13)".
  int length = 0;      // Gold words other than -NONE-, for the cut-off.
  int gold_brackets = 0;
  int test_brackets = 0;
  int matched = 0;
  int crossing = 0;    // Test brackets that cross a gold bracket.
  int words = 0;       // Words after deletion.
  int correct_tags = 0;
};

// Scores one test tree against its gold tree (both as read, cleaned or not).
EvalbSentence EvalbScoreTrees(const Tree& gold, const Tree& test);

// Sentences that could not be scored for a reason outside the trees: a
// missing or empty test tree is a skip, an unreadable tree an error.
EvalbSentence EvalbSkipSentence(int length);
EvalbSentence EvalbErrorSentence(int length, std::string error);

// Gold words other than -NONE-: EVALB's sentence length for the cut-off.
int EvalbLength(const Tree& gold);

struct EvalbTotals {
  int64_t sentences = 0;
  int64_t error_sentences = 0;
  int64_t skip_sentences = 0;
  int64_t gold_brackets = 0;
  int64_t test_brackets = 0;
  int64_t matched = 0;
  int64_t complete_match = 0;
  int64_t words = 0;
  int64_t crossing = 0;
  int64_t no_crossing = 0;
  int64_t two_or_less_crossing = 0;
  int64_t correct_tags = 0;

  void Add(const EvalbSentence& sentence);
  int64_t valid_sentences() const { return sentences - error_sentences - skip_sentences; }
  double recall() const;     // Percent.
  double precision() const;  // Percent.
  double f1() const;         // Percent, from the two above as EVALB does.
};

class EvalbScorer {
 public:
  void Add(const EvalbSentence& sentence);
  const EvalbTotals& all() const { return all_; }
  const EvalbTotals& short_sentences() const { return short_; }

  // EVALB's "=== Summary ===" block for all sentences and for len<=40,
  // followed by "Precision = ", "Recall = " and "F1 = " lines for all.
  std::string Format() const;

 private:
  EvalbTotals all_;
  EvalbTotals short_;
};

}  // namespace tfm

#endif  // TFM_TASKS_PARSING_EVALB_H_
