// Corpus formats by name: how a CorpusConfig of a given `format` is opened
// as a PairReader. The engine registers its own (PLAIN_TEXT, WMT_SGML,
// GETTEXT_MO, corpus.cc); a task registers the formats only it reads (the
// parsing task's PTB_MRG treebanks, tasks/parsing/ptb_corpus.cc), so that
// OpenCorpus knows none of them by name.
#ifndef TFM_CORE_DATA_CORPUS_FORMAT_REGISTRY_H_
#define TFM_CORE_DATA_CORPUS_FORMAT_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/config/task_config.pb.h"
#include "core/data/pair_reader.h"
#include "core/registry.h"

namespace tfm {

struct CorpusFormatDef {
  // CorpusConfig.Format's value name, e.g. "PTB_MRG".
  std::string name;
  std::string doc;
  // Opens `corpus` (whose format is this one); missing fields are
  // InvalidArgument naming the corpus. Lines over max_sentence_bytes are
  // skipped and counted, where the format has lines.
  std::function<absl::StatusOr<std::unique_ptr<PairReader>>(const config::CorpusConfig& corpus,
                                                            int64_t max_sentence_bytes)>
      open;
  // Whether the corpus's data is there, without reading it, for the check
  // before a run (validate, and before a tokenizer trains): OK with a line
  // for the log saying what was found, else the error naming the corpus and
  // what is missing (NotFound for absent files). Unset: nothing to check
  // cheaply, and open() finds out.
  std::function<absl::StatusOr<std::string>(const config::CorpusConfig& corpus)> check;
};

Registry<CorpusFormatDef>& CorpusFormatRegistry();

namespace internal {
struct CorpusFormatRegistrar {
  explicit CorpusFormatRegistrar(CorpusFormatDef def);
};
}  // namespace internal

#define TFM_REGISTER_CORPUS_FORMAT(...)                              \
  static ::tfm::internal::CorpusFormatRegistrar TFM_UNIQUE_NAME( \
      tfm_corpus_format_registrar_)(__VA_ARGS__)

}  // namespace tfm

#endif  // TFM_CORE_DATA_CORPUS_FORMAT_REGISTRY_H_
