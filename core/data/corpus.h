// Opens the corpus a CorpusConfig describes, whatever its format, as one
// streaming PairReader.
#ifndef TFM_CORE_DATA_CORPUS_H_
#define TFM_CORE_DATA_CORPUS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/pair_reader.h"
#include "core/data/sentence_checks.h"

namespace tfm {

// Where GETTEXT_MO corpora look when CorpusConfig.root is unset.
inline constexpr char kDefaultLocaleRoot[] = "/usr/share/locale";

// By the reader registered for the corpus's format
// (corpus_format_registry.h): PLAIN_TEXT and WMT_SGML read source_path and
// target_path; GETTEXT_MO reads root, source_lang and target_lang; a task's
// own formats read what the task says (parsing's PTB_MRG:
// tasks/parsing/ptb_corpus.h). A split other than ALL keeps the pairs whose
// source hashes into it (corpus_split.h). Missing fields and formats that no
// linked-in code reads are InvalidArgument naming the corpus.
absl::StatusOr<std::unique_ptr<PairReader>> OpenCorpus(
    const config::CorpusConfig& corpus, int64_t max_sentence_bytes = kDefaultMaxSentenceBytes);

// The check before a run, by the corpus's format (CorpusFormatDef::check):
// OK with what was found, e.g. "12 gettext catalogs in /usr/share/locale/de/
// LC_MESSAGES", or the error naming the corpus and what is missing; a format
// no linked-in code reads is InvalidArgument, as in OpenCorpus.
absl::StatusOr<std::string> CheckCorpusPresent(const config::CorpusConfig& corpus);

}  // namespace tfm

#endif  // TFM_CORE_DATA_CORPUS_H_
