// Reads compiled gettext catalogs (.mo) as translation pairs: the msgid (the
// program's original, English text) and its msgstr.
//
// Entries left out, each counted under its SkipReport key:
//  - "header entry": the empty msgid, whose msgstr is catalog metadata;
//  - "untranslated": an empty msgstr;
//  - "plural entry": a msgid holding a plural form after a NUL. Its msgstr
//    holds one form per plural category of the language, and which one goes
//    with the English singular or plural depends on the language's plural
//    rule, so the pair is not reliably aligned;
//  - the checks of sentence_checks.h on both sides.
// A context ("msgctxt\x04msgid") is stripped: it disambiguates for the
// program, it is not part of the text. Newlines and tabs (multi-line help
// texts) become single spaces so every pair fits the one-line-a-sentence
// corpora; everything else, format placeholders like %s, %1$d or {name}
// included, stays as text.
#ifndef TFM_CORE_DATA_MO_CATALOG_H_
#define TFM_CORE_DATA_MO_CATALOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/pair_reader.h"
#include "core/data/sentence_checks.h"
#include "core/data/skip_report.h"

namespace tfm {

inline constexpr char kSkipMoHeader[] = "header entry";
inline constexpr char kSkipUntranslated[] = "untranslated";
inline constexpr char kSkipPlural[] = "plural entry";

// Parses the .mo file at `path` (either byte order). A file that is not a
// valid catalog (bad magic, tables or strings outside the file) is an
// error naming the path; skipped entries go to *skips as "path:#index".
// `entries`, when given, receives each returned pair's string index (its
// "path:#index").
absl::StatusOr<std::vector<SentencePair>> ReadMoCatalog(
    const std::string& path, SkipReport* skips,
    int64_t max_sentence_bytes = kDefaultMaxSentenceBytes,
    std::vector<uint32_t>* entries = nullptr);

// The same for a catalog already in memory; `name` is used in messages.
absl::StatusOr<std::vector<SentencePair>> ParseMoCatalog(
    const std::string& bytes, const std::string& name, SkipReport* skips,
    int64_t max_sentence_bytes = kDefaultMaxSentenceBytes,
    std::vector<uint32_t>* entries = nullptr);

}  // namespace tfm

#endif  // TFM_CORE_DATA_MO_CATALOG_H_
