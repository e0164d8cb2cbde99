#include "core/data/mo_catalog.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tfm {
namespace {

// The .mo magic number as written by the producing machine; read in the
// other byte order it appears as kMagicSwapped.
constexpr uint32_t kMagic = 0x950412de;
constexpr uint32_t kMagicSwapped = 0xde120495;

// Header layout (GNU gettext manual, "The Format of GNU MO Files"): magic,
// revision, string count, offset of the original-string table, offset of
// the translation table; each table entry is (length, offset) of a
// NUL-terminated string.
constexpr size_t kHeaderBytes = 20;

class MoView {
 public:
  MoView(absl::string_view bytes, bool swapped) : bytes_(bytes), swapped_(swapped) {}

  // The 32-bit word at `offset`; false if it is outside the file.
  bool Word(uint64_t offset, uint32_t* value) const {
    if (offset + 4 > bytes_.size()) return false;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes_.data() + offset);
    *value = swapped_ ? (uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3])
                      : (uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0]);
    return true;
  }

  // String `index` of the table at `table`; false if out of bounds.
  bool String(uint64_t table, uint64_t index, absl::string_view* text) const {
    uint32_t length, offset;
    if (!Word(table + 8 * index, &length) || !Word(table + 8 * index + 4, &offset)) return false;
    if (uint64_t{offset} + length > bytes_.size()) return false;
    *text = bytes_.substr(offset, length);
    return true;
  }

 private:
  absl::string_view bytes_;
  bool swapped_;
};

// Newlines and tabs to single spaces, runs of spaces collapsed, trimmed.
std::string OneLine(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (space) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

absl::StatusOr<std::vector<SentencePair>> ParseMoCatalog(const std::string& bytes,
                                                         const std::string& name,
                                                         SkipReport* skips,
                                                         int64_t max_sentence_bytes,
                                                         std::vector<uint32_t>* entries) {
  if (bytes.size() < kHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": too short for a .mo catalog"));
  }
  uint32_t magic;
  MoView(bytes, false).Word(0, &magic);
  if (magic != kMagic && magic != kMagicSwapped) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": not a .mo catalog (bad magic number)"));
  }
  const MoView view(bytes, magic == kMagicSwapped);
  uint32_t revision, count, originals, translations;
  view.Word(4, &revision);
  view.Word(8, &count);
  view.Word(12, &originals);
  view.Word(16, &translations);
  // Major revisions 0 and 1 share this layout (1 only adds system-dependent
  // strings, which live in separate tables).
  if ((revision >> 16) > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": unsupported .mo revision ", revision >> 16));
  }
  if (uint64_t{count} * 8 > bytes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": corrupt .mo catalog (", count,
                                                   " strings cannot fit)"));
  }
  std::vector<SentencePair> pairs;
  for (uint32_t i = 0; i < count; ++i) {
    absl::string_view msgid, msgstr;
    if (!view.String(originals, i, &msgid) || !view.String(translations, i, &msgstr)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": corrupt .mo catalog (string ", i, " outside the file)"));
    }
    const std::string where = absl::StrCat(name, ":#", i);
    if (msgid.empty()) {
      skips->Skip(kSkipMoHeader, where);
      continue;
    }
    if (msgid.find('\0') != absl::string_view::npos) {
      skips->Skip(kSkipPlural, where);
      continue;
    }
    const size_t context_end = msgid.find('\x04');
    if (context_end != absl::string_view::npos) msgid.remove_prefix(context_end + 1);
    if (msgstr.empty()) {
      skips->Skip(kSkipUntranslated, where);
      continue;
    }
    SentencePair pair{OneLine(msgid), OneLine(msgstr)};
    const char* reason =
        PairRejection(pair.source, static_cast<int64_t>(pair.source.size()) > max_sentence_bytes,
                      pair.target, static_cast<int64_t>(pair.target.size()) > max_sentence_bytes);
    if (reason != nullptr) {
      skips->Skip(reason, where);
      continue;
    }
    pairs.push_back(std::move(pair));
    if (entries != nullptr) entries->push_back(i);
  }
  return pairs;
}

absl::StatusOr<std::vector<SentencePair>> ReadMoCatalog(const std::string& path,
                                                        SkipReport* skips,
                                                        int64_t max_sentence_bytes,
                                                        std::vector<uint32_t>* entries) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("read error in ", path));
  return ParseMoCatalog(contents.str(), path, skips, max_sentence_bytes, entries);
}

}  // namespace tfm
