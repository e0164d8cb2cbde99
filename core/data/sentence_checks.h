// The checks every reader applies to a sentence before passing it on, so
// that all corpus formats skip bad input for the same reasons, under the
// same keys in a SkipReport.
#ifndef TFM_CORE_DATA_SENTENCE_CHECKS_H_
#define TFM_CORE_DATA_SENTENCE_CHECKS_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace tfm {

// Skip reasons (SkipReport keys).
inline constexpr char kSkipInvalidUtf8[] = "invalid utf-8";
// A NUL byte is valid UTF-8 (U+0000) but in a text corpus it means binary
// data or a corrupt file (a sentence piece of it would be a token of junk).
inline constexpr char kSkipNulByte[] = "nul byte";
inline constexpr char kSkipEmpty[] = "empty line";
inline constexpr char kSkipTooLong[] = "over-long line";

// Default limit on a sentence in bytes: far above the 256-token training
// limit (about 1.5 KB of text), low enough to drop binary junk quickly.
inline constexpr int64_t kDefaultMaxSentenceBytes = 4096;

// The reason to skip `text`, or nullptr to keep it. `too_long` says the
// reader already cut the text at the byte limit. Whitespace-only text counts
// as empty; a NUL byte is refused as invalid UTF-8 is.
const char* SentenceRejection(absl::string_view text, bool too_long);

// The reason to skip a pair: the first side's reason, else the second's.
const char* PairRejection(absl::string_view source, bool source_too_long,
                          absl::string_view target, bool target_too_long);

}  // namespace tfm

#endif  // TFM_CORE_DATA_SENTENCE_CHECKS_H_
