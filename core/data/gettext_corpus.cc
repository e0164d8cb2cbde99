#include "core/data/gettext_corpus.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/data/mo_catalog.h"
#include "core/paths.h"

namespace tfm {
namespace {

// Names of the regular files ending in ".mo" in `dir`, sorted.
absl::StatusOr<std::vector<std::string>> ListCatalogs(const std::string& dir) {
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) {
    return absl::NotFoundError(absl::StrCat("no gettext catalog directory ", dir));
  }
  std::vector<std::string> paths;
  while (const dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (!absl::EndsWith(name, ".mo")) continue;
    const std::string path = JoinPath(dir, name);
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) paths.push_back(path);
  }
  closedir(handle);
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) return absl::NotFoundError(absl::StrCat("no .mo catalogs in ", dir));
  return paths;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> GettextCorpusReader::FindCatalogs(
    const std::string& root, const std::string& source_lang, const std::string& target_lang) {
  if ((source_lang == "en") == (target_lang == "en")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gettext corpora pair English (the msgids) with one other language; got ",
        source_lang, " -> ", target_lang));
  }
  const std::string& lang = source_lang == "en" ? target_lang : source_lang;
  return ListCatalogs(absl::StrCat(root, "/", lang, "/LC_MESSAGES"));
}

absl::StatusOr<std::unique_ptr<GettextCorpusReader>> GettextCorpusReader::Open(
    const std::string& root, const std::string& source_lang, const std::string& target_lang,
    int64_t max_sentence_bytes) {
  const bool english_source = source_lang == "en";
  auto paths = FindCatalogs(root, source_lang, target_lang);
  if (!paths.ok()) return paths.status();

  std::unique_ptr<GettextCorpusReader> reader(new GettextCorpusReader());
  absl::flat_hash_set<std::string> seen;
  for (const std::string& path : *paths) {
    std::vector<uint32_t> entries;
    auto pairs = ReadMoCatalog(path, &reader->skips_, max_sentence_bytes, &entries);
    if (!pairs.ok()) {
      reader->skips_.Skip(kSkipUnreadableCatalog, path);
      continue;
    }
    reader->catalogs_.push_back(path);
    const uint32_t catalog = static_cast<uint32_t>(reader->catalogs_.size() - 1);
    for (size_t i = 0; i < pairs->size(); ++i) {
      SentencePair& pair = (*pairs)[i];
      if (!english_source) std::swap(pair.source, pair.target);
      // NUL cannot occur inside either side (it ends .mo strings), so it
      // separates them unambiguously.
      if (!seen.insert(absl::StrCat(pair.source, std::string(1, '\0'), pair.target)).second) {
        reader->skips_.Skip(kSkipDuplicatePair, path);
        continue;
      }
      reader->pairs_.push_back(std::move(pair));
      reader->origins_.push_back({catalog, entries[i]});
    }
  }
  return reader;
}

std::string GettextCorpusReader::Where() const {
  if (next_ == 0) return std::string();
  const Origin& origin = origins_[next_ - 1];
  return absl::StrCat(catalogs_[origin.catalog], ":#", origin.entry);
}

absl::StatusOr<bool> GettextCorpusReader::Next(SentencePair* pair) {
  if (next_ == pairs_.size()) return false;
  *pair = pairs_[next_++];
  return true;
}

}  // namespace tfm
