// GETTEXT_MO corpora: every catalog <root>/<lang>/LC_MESSAGES/*.mo of a
// language read as English -> <lang> pairs (or the reverse), the default
// EN-DE and EN-FR corpus on any Debian machine.
//
// Catalogs are read in sorted file-name order, so the pair order is the same
// on every run. A pair (source and target) already seen in an earlier
// catalog is skipped as "duplicate pair": common strings ("Cancel",
// "--help") recur in many programs. A catalog that cannot be parsed is
// skipped as "unreadable catalog" rather than failing the whole corpus.
// The pairs are held in memory: all catalogs of a language are a few MB.
#ifndef TFM_CORE_DATA_GETTEXT_CORPUS_H_
#define TFM_CORE_DATA_GETTEXT_CORPUS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/data/pair_reader.h"
#include "core/data/sentence_checks.h"

namespace tfm {

inline constexpr char kSkipDuplicatePair[] = "duplicate pair";
inline constexpr char kSkipUnreadableCatalog[] = "unreadable catalog";

class GettextCorpusReader : public PairReader {
 public:
  // One of the languages must be "en" (gettext msgids are English); the
  // other names the locale directory. A root or language directory that does
  // not exist, or one without catalogs, is NotFound naming the path.
  static absl::StatusOr<std::unique_ptr<GettextCorpusReader>> Open(
      const std::string& root, const std::string& source_lang, const std::string& target_lang,
      int64_t max_sentence_bytes = kDefaultMaxSentenceBytes);

  // The .mo files Open would read (sorted), without reading them: the
  // check before a run that the data is there. Errors as Open's.
  static absl::StatusOr<std::vector<std::string>> FindCatalogs(const std::string& root,
                                                               const std::string& source_lang,
                                                               const std::string& target_lang);

  absl::StatusOr<bool> Next(SentencePair* pair) override;
  const SkipReport& skips() const override { return skips_; }
  // "catalog.mo:#index", as the catalog's skipped entries are named.
  std::string Where() const override;

  // The catalogs that were read, in order.
  const std::vector<std::string>& catalogs() const { return catalogs_; }

 private:
  GettextCorpusReader() = default;

  std::vector<std::string> catalogs_;
  std::vector<SentencePair> pairs_;
  // Per pair: its catalog (index into catalogs_) and string index there.
  struct Origin {
    uint32_t catalog;
    uint32_t entry;
  };
  std::vector<Origin> origins_;
  size_t next_ = 0;
  SkipReport skips_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_GETTEXT_CORPUS_H_
