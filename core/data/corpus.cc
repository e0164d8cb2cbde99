#include "core/data/corpus.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/data/aligned_text_reader.h"
#include "core/data/corpus_format_registry.h"
#include "core/data/corpus_split.h"
#include "core/data/gettext_corpus.h"
#include "core/data/wmt_sgml_reader.h"
#include "core/paths.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

std::string CorpusName(const config::CorpusConfig& corpus) {
  return corpus.has_name() ? corpus.name() : "(unnamed)";
}

absl::Status RequireSourceAndTarget(const config::CorpusConfig& corpus) {
  if (!corpus.source_path().empty() && !corpus.target_path().empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("corpus ", CorpusName(corpus), ": source_path and target_path are required"));
}

bool IsFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Why `path` (as the config gives it) is not a readable corpus file: a
// directory, or missing; a relative path says where it was looked for,
// since that depends on how the binary was started.
std::string WhyNotAFile(const std::string& path) {
  const std::string resolved = ResolveDataPath(path);
  struct stat info;
  if (stat(resolved.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return absl::StrCat("'", path, "' is a directory, not a file");
  }
  std::string why = absl::StrCat("file '", path, "' not found");
  if (!path.empty() && path.front() != '/') {
    const std::string looked_for = std::filesystem::absolute(resolved).lexically_normal().string();
    absl::StrAppend(&why, " (looked for ", looked_for,
                    ": a relative path is taken from the project root under `bazel run`, "
                    "else from the working directory)");
  }
  return why;
}

// PLAIN_TEXT's and WMT_SGML's check: both files exist.
absl::StatusOr<std::string> CheckSourceAndTarget(const config::CorpusConfig& corpus) {
  if (absl::Status status = RequireSourceAndTarget(corpus); !status.ok()) return status;
  for (const std::string& path : {corpus.source_path(), corpus.target_path()}) {
    if (!IsFile(ResolveDataPath(path))) {
      return absl::NotFoundError(
          absl::StrCat("corpus ", CorpusName(corpus), ": ", WhyNotAFile(path)));
    }
  }
  return absl::StrCat(ResolveDataPath(corpus.source_path()), " and ",
                      ResolveDataPath(corpus.target_path()));
}

std::string LocaleRoot(const config::CorpusConfig& corpus) {
  return corpus.has_root() ? ResolveDataPath(corpus.root()) : kDefaultLocaleRoot;
}

absl::Status RequireLanguages(const config::CorpusConfig& corpus) {
  if (!corpus.source_lang().empty() && !corpus.target_lang().empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("corpus ", CorpusName(corpus), ": source_lang and target_lang are required"));
}

// The engine's own formats; tasks register theirs beside them.
TFM_REGISTER_CORPUS_FORMAT(CorpusFormatDef{
    .name = "PLAIN_TEXT",
    .doc = "one sentence a line in aligned source and target files, optionally gzip",
    .open = [](const config::CorpusConfig& corpus, int64_t max_sentence_bytes)
        -> absl::StatusOr<std::unique_ptr<PairReader>> {
      if (absl::Status status = RequireSourceAndTarget(corpus); !status.ok()) return status;
      return AlignedTextReader::Open(ResolveDataPath(corpus.source_path()),
                                     ResolveDataPath(corpus.target_path()), max_sentence_bytes);
    },
    .check = CheckSourceAndTarget,
});

TFM_REGISTER_CORPUS_FORMAT(CorpusFormatDef{
    .name = "WMT_SGML",
    .doc = "WMT test sets: <seg id=...> lines in a source and a reference file",
    .open = [](const config::CorpusConfig& corpus, int64_t max_sentence_bytes)
        -> absl::StatusOr<std::unique_ptr<PairReader>> {
      if (absl::Status status = RequireSourceAndTarget(corpus); !status.ok()) return status;
      return WmtSgmlReader::Open(ResolveDataPath(corpus.source_path()),
                                 ResolveDataPath(corpus.target_path()), max_sentence_bytes);
    },
    .check = CheckSourceAndTarget,
});

TFM_REGISTER_CORPUS_FORMAT(CorpusFormatDef{
    .name = "GETTEXT_MO",
    .doc = "compiled gettext catalogs: msgid -> msgstr pairs",
    .open = [](const config::CorpusConfig& corpus, int64_t max_sentence_bytes)
        -> absl::StatusOr<std::unique_ptr<PairReader>> {
      if (absl::Status status = RequireLanguages(corpus); !status.ok()) return status;
      return GettextCorpusReader::Open(LocaleRoot(corpus), corpus.source_lang(),
                                       corpus.target_lang(), max_sentence_bytes);
    },
    .check = [](const config::CorpusConfig& corpus) -> absl::StatusOr<std::string> {
      if (absl::Status status = RequireLanguages(corpus); !status.ok()) return status;
      absl::StatusOr<std::vector<std::string>> catalogs = GettextCorpusReader::FindCatalogs(
          LocaleRoot(corpus), corpus.source_lang(), corpus.target_lang());
      if (!catalogs.ok()) {
        return absl::Status(catalogs.status().code(),
                            absl::StrCat("corpus ", CorpusName(corpus), ": ",
                                         catalogs.status().message()));
      }
      const std::string& first = catalogs->front();
      return absl::StrCat(catalogs->size(), " gettext catalogs in ",
                          first.substr(0, first.rfind('/')));
    },
});

// The registered format of `corpus`.
absl::StatusOr<std::shared_ptr<const CorpusFormatDef>> FormatOf(
    const config::CorpusConfig& corpus) {
  const std::string format = config::CorpusConfig::Format_Name(corpus.format());
  absl::StatusOr<std::shared_ptr<const CorpusFormatDef>> def =
      CorpusFormatRegistry().Find(format);
  if (!def.ok()) {
    // Most often a task's format whose task is not linked in.
    return absl::InvalidArgumentError(absl::StrCat("corpus ", CorpusName(corpus), ": format ",
                                                   format, " is not supported: ",
                                                   def.status().message()));
  }
  return def;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PairReader>> OpenCorpus(const config::CorpusConfig& corpus,
                                                       int64_t max_sentence_bytes) {
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const CorpusFormatDef> def, FormatOf(corpus));
  absl::StatusOr<std::unique_ptr<PairReader>> reader = def->open(corpus, max_sentence_bytes);
  if (!reader.ok()) return reader.status();
  return FilterSplit(*std::move(reader), corpus.split());
}

absl::StatusOr<std::string> CheckCorpusPresent(const config::CorpusConfig& corpus) {
  TFM_ASSIGN_OR_RETURN(std::shared_ptr<const CorpusFormatDef> def, FormatOf(corpus));
  if (!def->check) return absl::StrCat(def->name, " corpus (read when the run starts)");
  return def->check(corpus);
}

}  // namespace tfm
