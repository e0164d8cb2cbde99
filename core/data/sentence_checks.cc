#include "core/data/sentence_checks.h"

#include "absl/strings/ascii.h"
#include "core/data/utf8.h"

namespace tfm {

const char* SentenceRejection(absl::string_view text, bool too_long) {
  if (too_long) return kSkipTooLong;
  if (absl::StripAsciiWhitespace(text).empty()) return kSkipEmpty;
  if (!IsValidUtf8(text)) return kSkipInvalidUtf8;
  if (text.find('\0') != absl::string_view::npos) return kSkipNulByte;
  return nullptr;
}

const char* PairRejection(absl::string_view source, bool source_too_long,
                          absl::string_view target, bool target_too_long) {
  const char* reason = SentenceRejection(source, source_too_long);
  return reason != nullptr ? reason : SentenceRejection(target, target_too_long);
}

}  // namespace tfm
