#include "core/metrics/tokenizer_13a.h"

#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/metrics/python_text.h"

namespace tfm {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsPeriodOrComma(char c) { return c == '.' || c == ','; }

// The ASCII symbols that always become tokens of their own: everything
// printable that is not a letter, digit, period, comma, hyphen or apostrophe
// (sacreBLEU's class [{-~[-` -&(-+:-@/]). The space is in the class too;
// padding it with more spaces is harmless.
bool IsSplitSymbol(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

// Applies a two-character rewrite rule left to right without overlaps, like
// one re.sub() pass: when `matches(a, b)` holds for the pair at i, the pair is
// replaced and scanning resumes after it. Multi-byte UTF-8 characters need no
// care: the rules only test ASCII bytes, and the bytes of a multi-byte
// character are never ASCII.
template <typename Matches, typename Emit>
std::string RewritePairs(const std::string& text, Matches matches, Emit emit) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  size_t i = 0;
  while (i < text.size()) {
    if (i + 1 < text.size() && matches(text[i], text[i + 1])) {
      emit(text[i], text[i + 1], &out);
      i += 2;
    } else {
      out.push_back(text[i]);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::string Tokenize13a(absl::string_view input) {
  // Language-independent part. Each replacement is its own pass, in this
  // order, as in sacreBLEU ("&amp;lt;" therefore becomes "<").
  std::string line = absl::StrReplaceAll(input, {{"<skipped>", ""}});
  line = absl::StrReplaceAll(line, {{"-\n", ""}});
  line = absl::StrReplaceAll(line, {{"\n", " "}});
  if (line.find('&') != std::string::npos) {
    line = absl::StrReplaceAll(line, {{"&quot;", "\""}});
    line = absl::StrReplaceAll(line, {{"&amp;", "&"}});
    line = absl::StrReplaceAll(line, {{"&lt;", "<"}});
    line = absl::StrReplaceAll(line, {{"&gt;", ">"}});
  }

  // Symbols become separate tokens.
  std::string spaced = " ";
  spaced.reserve(line.size() * 2 + 2);
  for (char c : line) {
    if (IsSplitSymbol(c)) {
      spaced.push_back(' ');
      spaced.push_back(c);
      spaced.push_back(' ');
    } else {
      spaced.push_back(c);
    }
  }
  spaced.push_back(' ');

  // Period and comma split off unless preceded by a digit...
  spaced = RewritePairs(
      spaced, [](char a, char b) { return !IsDigit(a) && IsPeriodOrComma(b); },
      [](char a, char b, std::string* out) {
        out->push_back(a);
        out->push_back(' ');
        out->push_back(b);
        out->push_back(' ');
      });
  // ...and unless followed by a digit, so "1,000.5" stays whole.
  spaced = RewritePairs(
      spaced, [](char a, char b) { return IsPeriodOrComma(a) && !IsDigit(b); },
      [](char a, char b, std::string* out) {
        out->push_back(' ');
        out->push_back(a);
        out->push_back(' ');
        out->push_back(b);
      });
  // A dash after a digit splits off ("5-year" -> "5 - year").
  spaced = RewritePairs(
      spaced, [](char a, char b) { return IsDigit(a) && b == '-'; },
      [](char a, char b, std::string* out) {
        out->push_back(a);
        out->push_back(' ');
        out->push_back(b);
        out->push_back(' ');
      });

  return absl::StrJoin(PythonSplit(spaced), " ");
}

}  // namespace tfm
