// Strict UTF-8 validation for corpus text: the tokenizer and the metrics
// assume valid UTF-8, so readers drop records that are not.
#ifndef TFM_CORE_DATA_UTF8_H_
#define TFM_CORE_DATA_UTF8_H_

#include "absl/strings/string_view.h"

namespace tfm {

// True if `text` is well-formed UTF-8 (RFC 3629): no overlong forms, no
// surrogates, nothing above U+10FFFF, no truncated sequences.
bool IsValidUtf8(absl::string_view text);

}  // namespace tfm

#endif  // TFM_CORE_DATA_UTF8_H_
