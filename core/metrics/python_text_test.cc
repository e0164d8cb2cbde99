#include "core/metrics/python_text.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tfm {
namespace {

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view field : PythonSplit(text)) out.emplace_back(field);
  return out;
}

TEST(PythonTextTest, SplitsOnUnicodeWhitespaceLikeStrSplit) {
  // U+00A0 (no-break space), U+3000 (ideographic space), U+001C (file
  // separator) and U+2028 are whitespace to Python; U+200B is not.
  EXPECT_EQ(Split(" a\xC2\xA0" "b\xE3\x80\x80\x1C" "c\xE2\x80\xA8 d\xE2\x80\x8B" "e "),
            (std::vector<std::string>{"a", "b", "c", "d\xE2\x80\x8B" "e"}));
  EXPECT_TRUE(Split(" \t\r\n").empty());
  EXPECT_TRUE(Split("").empty());
}

TEST(PythonTextTest, RstripRemovesTrailingUnicodeWhitespaceOnly) {
  EXPECT_EQ(PythonRstrip(" a b\t\r\xC2\xA0\xC2\x85"), " a b");
  EXPECT_EQ(PythonRstrip("\xE2\x80\x89"), "");
  EXPECT_EQ(PythonRstrip("x\xE2\x80\x8B"), "x\xE2\x80\x8B");
}

TEST(PythonTextTest, CodePointOffsetsTolerateInvalidBytes) {
  EXPECT_EQ(CodePointOffsets("a\xC3\xA9z"), (std::vector<size_t>{0, 1, 3, 4}));
  // A truncated sequence and a stray continuation byte count one byte each.
  EXPECT_EQ(CodePointOffsets("\xC3" "a\x80"), (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(PythonTextTest, RemovesAllSpaces) {
  EXPECT_EQ(RemovePythonSpaces(" Ein  Mann\xC2\xA0geht. "), "EinManngeht.");
}

}  // namespace
}  // namespace tfm
