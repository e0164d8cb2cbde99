#include "core/data/wmt_sgml_reader.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tfm {
namespace {

// Encodes code point `c` as UTF-8; false for surrogates and values above
// U+10FFFF, which have no encoding.
bool AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    if (c >= 0xD800 && c <= 0xDFFF) return false;
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c <= 0x10FFFF) {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    return false;
  }
  return true;
}

// Decodes the entity body `name` (between '&' and ';'); false if unknown.
bool DecodeEntity(absl::string_view name, std::string* out) {
  if (name == "amp") return out->append("&"), true;
  if (name == "lt") return out->append("<"), true;
  if (name == "gt") return out->append(">"), true;
  if (name == "quot") return out->append("\""), true;
  if (name == "apos") return out->append("'"), true;
  if (name.size() < 2 || name[0] != '#' || name.size() > 10) return false;
  uint32_t code = 0;
  const bool hex = name[1] == 'x' || name[1] == 'X';
  const absl::string_view digits = name.substr(hex ? 2 : 1);
  if (digits.empty()) return false;
  for (char c : digits) {
    if (hex ? !absl::ascii_isxdigit(c) : !absl::ascii_isdigit(c)) return false;
  }
  const bool parsed = hex ? absl::SimpleHexAtoi(digits, &code) : absl::SimpleAtoi(digits, &code);
  return parsed && code != 0 && AppendUtf8(code, out);
}

// The value of attribute `name` in the tag text `tag`, or "".
std::string Attribute(absl::string_view tag, absl::string_view name) {
  const std::string key = absl::StrCat(name, "=");
  size_t pos = 0;
  while ((pos = tag.find(key, pos)) != absl::string_view::npos) {
    // Must start an attribute: "docid=" inside "origdocid=" does not count.
    if (pos > 0 && !absl::ascii_isspace(tag[pos - 1])) {
      pos += key.size();
      continue;
    }
    pos += key.size();
    if (pos >= tag.size()) return "";
    const char quote = tag[pos];
    if (quote == '"' || quote == '\'') {
      const size_t end = tag.find(quote, pos + 1);
      if (end == absl::string_view::npos) return "";
      return std::string(tag.substr(pos + 1, end - pos - 1));
    }
    size_t end = pos;
    while (end < tag.size() && !absl::ascii_isspace(tag[end]) && tag[end] != '>') ++end;
    return std::string(tag.substr(pos, end - pos));
  }
  return "";
}

}  // namespace

std::string DecodeSgmlEntities(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '&') {
      const size_t semicolon = text.find(';', i + 1);
      if (semicolon != absl::string_view::npos &&
          DecodeEntity(text.substr(i + 1, semicolon - i - 1), &out)) {
        i = semicolon + 1;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<SgmlSegmentReader>> SgmlSegmentReader::Open(
    const std::string& path, int64_t max_line_bytes) {
  // Room for the markup around a sentence of the maximum length.
  TFM_ASSIGN_OR_RETURN(auto lines, LineReader::Open(path, max_line_bytes + 256));
  return std::unique_ptr<SgmlSegmentReader>(new SgmlSegmentReader(std::move(lines)));
}

absl::StatusOr<bool> SgmlSegmentReader::Next(SgmlSegment* segment) {
  std::string line;
  bool too_long;
  while (true) {
    TFM_ASSIGN_OR_RETURN(const bool more, lines_->Next(&line, &too_long));
    if (!more) return false;
    const size_t doc = line.find("<doc");
    if (doc != std::string::npos) {
      const size_t close = line.find('>', doc);
      doc_id_ = Attribute(absl::string_view(line).substr(doc, close - doc), "docid");
    }
    const size_t open = line.find("<seg");
    if (open == std::string::npos) continue;
    const size_t open_end = line.find('>', open);
    *segment = SgmlSegment();
    segment->doc_id = doc_id_;
    segment->line = lines_->line_number();
    segment->too_long = too_long;
    if (open_end == std::string::npos) {
      segment->malformed = true;
      return true;
    }
    segment->seg_id = Attribute(absl::string_view(line).substr(open, open_end - open), "id");
    const size_t close = line.find("</seg>", open_end);
    if (close == std::string::npos) {
      segment->malformed = !too_long;
      return true;
    }
    segment->text = std::string(absl::StripAsciiWhitespace(
        DecodeSgmlEntities(absl::string_view(line).substr(open_end + 1, close - open_end - 1))));
    return true;
  }
}

absl::StatusOr<std::unique_ptr<WmtSgmlReader>> WmtSgmlReader::Open(
    const std::string& source_path, const std::string& target_path,
    int64_t max_sentence_bytes) {
  TFM_ASSIGN_OR_RETURN(auto source, SgmlSegmentReader::Open(source_path, max_sentence_bytes));
  TFM_ASSIGN_OR_RETURN(auto target, SgmlSegmentReader::Open(target_path, max_sentence_bytes));
  return std::unique_ptr<WmtSgmlReader>(
      new WmtSgmlReader(std::move(source), std::move(target), max_sentence_bytes));
}

std::string WmtSgmlReader::Where() const { return absl::StrCat(source_->path(), ":", line_); }

absl::StatusOr<bool> WmtSgmlReader::Next(SentencePair* pair) {
  SgmlSegment source, target;
  while (true) {
    TFM_ASSIGN_OR_RETURN(const bool has_source, source_->Next(&source));
    TFM_ASSIGN_OR_RETURN(const bool has_target, target_->Next(&target));
    if (!has_source && !has_target) return false;
    if (has_source != has_target) {
      int64_t source_count = segments_ + has_source, target_count = segments_ + has_target;
      SgmlSegment rest;
      while (true) {
        TFM_ASSIGN_OR_RETURN(const bool more, source_->Next(&rest));
        if (!more) break;
        ++source_count;
      }
      while (true) {
        TFM_ASSIGN_OR_RETURN(const bool more, target_->Next(&rest));
        if (!more) break;
        ++target_count;
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "source and reference are not aligned: ", source_->path(), " has ", source_count,
          " segments, ", target_->path(), " has ", target_count, " segments"));
    }
    ++segments_;
    if (source.doc_id != target.doc_id || source.seg_id != target.seg_id) {
      return absl::FailedPreconditionError(absl::StrCat(
          "source and reference are not aligned: ", source_->path(), ":", source.line,
          " is doc \"", source.doc_id, "\" seg \"", source.seg_id, "\" but ", target_->path(),
          ":", target.line, " is doc \"", target.doc_id, "\" seg \"", target.seg_id, "\""));
    }
    line_ = source.line;
    if (source.malformed || target.malformed) {
      skips_.Skip(kSkipMalformedSeg, Where());
      continue;
    }
    const char* reason = PairRejection(
        source.text, source.too_long || static_cast<int64_t>(source.text.size()) > max_bytes_,
        target.text, target.too_long || static_cast<int64_t>(target.text.size()) > max_bytes_);
    if (reason != nullptr) {
      skips_.Skip(reason, Where());
      continue;
    }
    pair->source = std::move(source.text);
    pair->target = std::move(target.text);
    return true;
  }
}

}  // namespace tfm
