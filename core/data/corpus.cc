#include "core/data/corpus.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/data/aligned_text_reader.h"
#include "core/data/corpus_split.h"
#include "core/data/gettext_corpus.h"
#include "core/data/ptb_corpus.h"
#include "core/data/wmt_sgml_reader.h"
#include "core/paths.h"

namespace tfm {
namespace {

absl::StatusOr<std::unique_ptr<PairReader>> OpenFormat(const config::CorpusConfig& corpus,
                                                       int64_t max_sentence_bytes) {
  const std::string name = corpus.has_name() ? corpus.name() : "(unnamed)";
  switch (corpus.format()) {
    case config::CorpusConfig::PLAIN_TEXT:
    case config::CorpusConfig::WMT_SGML:
      if (corpus.source_path().empty() || corpus.target_path().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("corpus ", name, ": source_path and target_path are required"));
      }
      if (corpus.format() == config::CorpusConfig::PLAIN_TEXT) {
        return AlignedTextReader::Open(ResolveDataPath(corpus.source_path()),
                                       ResolveDataPath(corpus.target_path()), max_sentence_bytes);
      }
      return WmtSgmlReader::Open(ResolveDataPath(corpus.source_path()),
                                 ResolveDataPath(corpus.target_path()), max_sentence_bytes);
    case config::CorpusConfig::GETTEXT_MO:
      if (corpus.source_lang().empty() || corpus.target_lang().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("corpus ", name, ": source_lang and target_lang are required"));
      }
      return GettextCorpusReader::Open(
          corpus.has_root() ? ResolveDataPath(corpus.root()) : kDefaultLocaleRoot,
                                       corpus.source_lang(), corpus.target_lang(),
                                       max_sentence_bytes);
    case config::CorpusConfig::PTB_MRG: {
      if (corpus.root().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("corpus ", name, ": root (the treebank directory) is required"));
      }
      auto files = PtbCorpusFiles(corpus, ResolveDataPath(corpus.root()));
      if (!files.ok()) return files.status();
      return OpenPtbCorpus(*std::move(files), TreeLeafStyle(corpus.tree_leaves()),
                           corpus.subtree_min_words());
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("corpus ", name, ": format ",
                       config::CorpusConfig::Format_Name(corpus.format()), " is not supported"));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PairReader>> OpenCorpus(const config::CorpusConfig& corpus,
                                                       int64_t max_sentence_bytes) {
  auto reader = OpenFormat(corpus, max_sentence_bytes);
  if (!reader.ok()) return reader.status();
  return FilterSplit(*std::move(reader), corpus.split());
}

}  // namespace tfm
