#include "runtime/decode/shortlist_file.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/data/binary_corpus_format.h"
#include "core/data/file_io.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

constexpr absl::string_view kMagic = "tfm-shortlist";
// 2 ends with an "end" line, so that a file cut at a line boundary (every
// line whole, some missing) is not read as a smaller shortlist. 1 has none;
// it is still read.
constexpr int kFormatVersion = 2;
constexpr absl::string_view kEnd = "end";

void AppendIds(const std::vector<int32_t>& ids, std::string* out) {
  for (const int32_t id : ids) absl::StrAppend(out, " ", id);
}

// One line's words after its key, as ids of a vocabulary of `size`.
absl::Status ParseIds(const std::vector<absl::string_view>& words, size_t first, int64_t size,
                      const std::string& where, std::vector<int32_t>* ids) {
  ids->clear();
  for (size_t i = first; i < words.size(); ++i) {
    int32_t id = 0;
    if (!absl::SimpleAtoi(words[i], &id) || id < 0 || id >= size) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": '", words[i],
                                                     "' is not a token id of the vocabulary of ",
                                                     size));
    }
    ids->push_back(id);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteShortlistFile(const std::string& path, const ShortlistTable& table) {
  std::string text = absl::StrCat(kMagic, " ", kFormatVersion, "\n");
  for (const std::string& comment : table.comments) absl::StrAppend(&text, "# ", comment, "\n");
  absl::StrAppend(&text, "vocabulary_size ", table.vocabulary_size, "\n");
  absl::StrAppend(&text, absl::StrFormat("vocabulary_checksum %016x\n", table.vocabulary_checksum));
  absl::StrAppend(&text, "frequent");
  AppendIds(table.frequent, &text);
  absl::StrAppend(&text, "\n");
  for (size_t s = 0; s < table.best.size(); ++s) {
    if (table.best[s].empty()) continue;
    absl::StrAppend(&text, "source ", s);
    AppendIds(table.best[s], &text);
    absl::StrAppend(&text, "\n");
  }
  absl::StrAppend(&text, kEnd, "\n");
  return WriteFileAtomically(path, text);
}

absl::StatusOr<ShortlistTable> ReadShortlistFile(const std::string& path) {
  TFM_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(path));
  if (!text.empty() && text.back() != '\n') {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the last line has no newline (a truncated file?)"));
  }
  ShortlistTable table;
  bool has_magic = false, has_size = false, has_checksum = false, has_frequent = false;
  int version = 0;
  bool ended = false;
  int line_number = 0;
  for (const absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (line.empty()) continue;  // Blank lines, and the split after the last newline.
    const std::string where = absl::StrCat(path, ":", line_number);
    if (!has_magic) {
      for (const int known : {1, kFormatVersion}) {
        if (line == absl::StrCat(kMagic, " ", known)) version = known;
      }
      if (version == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": not a shortlist file of format 1 or ", kFormatVersion, " (expected '",
            kMagic, " ", kFormatVersion, "', the `shortlist` command's output)"));
      }
      has_magic = true;
      continue;
    }
    if (line.front() == '#') continue;
    const std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    const absl::string_view key = words.empty() ? absl::string_view() : words[0];
    if (ended) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": '", key, "' after the '", kEnd, "' line"));
    }
    if (key == kEnd && version >= 2) {
      ended = true;
      continue;
    }
    if (key == "vocabulary_size") {
      if (words.size() != 2 || !absl::SimpleAtoi(words[1], &table.vocabulary_size) ||
          table.vocabulary_size < 1 || table.vocabulary_size > (int64_t{1} << 31) - 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": expected 'vocabulary_size N' with N >= 1"));
      }
      table.best.assign(table.vocabulary_size, {});
      has_size = true;
      continue;
    }
    if (key == "vocabulary_checksum") {
      if (words.size() != 2 || !absl::SimpleHexAtoi(words[1], &table.vocabulary_checksum)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": expected 'vocabulary_checksum HEX'"));
      }
      has_checksum = true;
      continue;
    }
    if (key != "frequent" && key != "source") {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown record '", key,
          "' (expected vocabulary_size, vocabulary_checksum, frequent or source)"));
    }
    if (!has_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": '", key, "' before the vocabulary_size line"));
    }
    if (key == "frequent") {
      if (has_frequent) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": a second 'frequent' line"));
      }
      TFM_RETURN_IF_ERROR(ParseIds(words, 1, table.vocabulary_size, where, &table.frequent));
      has_frequent = true;
      continue;
    }
    int64_t source = -1;
    if (words.size() < 2 || !absl::SimpleAtoi(words[1], &source) || source < 0 ||
        source >= table.vocabulary_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": expected 'source ID TARGET...' with ID a token id of the vocabulary of ",
          table.vocabulary_size));
    }
    if (!table.best[source].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a second line for source ", source));
    }
    TFM_RETURN_IF_ERROR(ParseIds(words, 2, table.vocabulary_size, where, &table.best[source]));
  }
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty"));
  if (!has_size || !has_checksum || !has_frequent) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no ", !has_size ? "vocabulary_size" : !has_checksum ? "vocabulary_checksum" : "frequent",
        " line (a truncated file?)"));
  }
  if (version >= 2 && !ended) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no '", kEnd, "' line after its ", line_number - 1,
        " lines: the file is cut short (write it again with the `shortlist` command)"));
  }
  return table;
}

absl::StatusOr<VocabularyShortlist> LoadShortlist(const std::string& path,
                                                  int64_t vocabulary_size,
                                                  uint64_t vocabulary_checksum,
                                                  int frequent_count, int best_count) {
  TFM_ASSIGN_OR_RETURN(ShortlistTable table, ReadShortlistFile(path));
  if (table.vocabulary_size != vocabulary_size ||
      table.vocabulary_checksum != vocabulary_checksum) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: learned for a vocabulary of %d tokens (checksum %016x), but the model's has %d "
        "(checksum %016x): learn one for this model with the `shortlist` command",
        path, table.vocabulary_size, table.vocabulary_checksum, vocabulary_size,
        vocabulary_checksum));
  }
  absl::StatusOr<VocabularyShortlist> shortlist =
      VocabularyShortlist::Create(table.vocabulary_size, std::move(table.frequent),
                                  std::move(table.best), frequent_count, best_count);
  if (!shortlist.ok()) {
    return absl::Status(shortlist.status().code(),
                        absl::StrCat(path, ": ", shortlist.status().message()));
  }
  return shortlist;
}

uint64_t VocabularyChecksum(const Tokenizer& tokenizer) { return Fnv1a64(tokenizer.model()); }

absl::StatusOr<VocabularyShortlist> LoadShortlist(const std::string& path,
                                                  const Tokenizer& tokenizer, int frequent_count,
                                                  int best_count) {
  return LoadShortlist(path, tokenizer.vocab_size(), VocabularyChecksum(tokenizer),
                       frequent_count, best_count);
}

}  // namespace tfm
