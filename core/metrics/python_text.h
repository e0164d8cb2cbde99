// Python's notion of text, in UTF-8 bytes: sacreBLEU splits and strips lines
// with str.split() and str.rstrip(), which treat every Unicode whitespace code
// point (not just ASCII) as a separator. Matching its scores exactly needs the
// same rules here.
#ifndef TFM_CORE_METRICS_PYTHON_TEXT_H_
#define TFM_CORE_METRICS_PYTHON_TEXT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tfm {

// True for the code points that Python's str.isspace() accepts.
bool IsPythonSpace(char32_t code_point);

// Byte offsets where each code point of `text` starts, plus text.size() at the
// end. Bytes that do not form valid UTF-8 count as one code point each, so
// callers never crash on bad input.
std::vector<size_t> CodePointOffsets(absl::string_view text);

// str.split() with no argument: runs of Unicode whitespace separate fields,
// and no field is empty.
std::vector<absl::string_view> PythonSplit(absl::string_view text);

// str.rstrip() with no argument.
absl::string_view PythonRstrip(absl::string_view text);

// ''.join(text.split()): the text with all Unicode whitespace removed.
std::string RemovePythonSpaces(absl::string_view text);

}  // namespace tfm

#endif  // TFM_CORE_METRICS_PYTHON_TEXT_H_
