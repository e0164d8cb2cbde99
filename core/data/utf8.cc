#include "core/data/utf8.h"

#include <cstdint>

namespace tfm {

bool IsValidUtf8(absl::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const uint8_t* const end = p + text.size();
  while (p < end) {
    const uint8_t lead = *p;
    if (lead < 0x80) {
      ++p;
      continue;
    }
    int continuation;
    // The allowed range of the second byte rules out overlong forms,
    // surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
    uint8_t second_low = 0x80, second_high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      continuation = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      continuation = 2;
      if (lead == 0xE0) second_low = 0xA0;
      if (lead == 0xED) second_high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      continuation = 3;
      if (lead == 0xF0) second_low = 0x90;
      if (lead == 0xF4) second_high = 0x8F;
    } else {
      return false;
    }
    if (end - p <= continuation) return false;
    if (p[1] < second_low || p[1] > second_high) return false;
    for (int i = 2; i <= continuation; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
    }
    p += continuation + 1;
  }
  return true;
}

}  // namespace tfm
