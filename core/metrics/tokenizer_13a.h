// The "13a" tokenizer of sacreBLEU (its default for BLEU), a reimplementation
// of mteval-v13a.pl as used by WMT. Scores are only comparable across papers
// when this tokenization is bit-for-bit the same, so every rule mirrors
// sacreBLEU 2.4.3, including its quirks (entity unescaping only of four
// entities, digit-sensitive period and comma splitting, Unicode whitespace).
#ifndef TFM_CORE_METRICS_TOKENIZER_13A_H_
#define TFM_CORE_METRICS_TOKENIZER_13A_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tfm {

// Tokens of `line` (UTF-8) joined by single spaces, no leading or trailing
// space.
std::string Tokenize13a(absl::string_view line);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_TOKENIZER_13A_H_
