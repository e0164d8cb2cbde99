#include "core/metrics/tokenizer_13a.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

TEST(Tokenizer13aTest, HandWorkedExamples) {
  EXPECT_EQ(Tokenize13a("Hello, world!"), "Hello , world !");
  // Commas and periods inside numbers stay; a sentence-final one splits.
  EXPECT_EQ(Tokenize13a("It costs $1,000.50."), "It costs $ 1,000.50 .");
  // A dash after a digit splits; between letters it stays.
  EXPECT_EQ(Tokenize13a("a 5-year well-known plan"), "a 5 - year well-known plan");
  // Only four entities are unescaped, each in its own pass.
  EXPECT_EQ(Tokenize13a("&quot;A&amp;B&quot; &amp;lt; &apos;"), "\" A & B \" < & apos ;");
  EXPECT_EQ(Tokenize13a("x<skipped>y"), "xy");
  EXPECT_EQ(Tokenize13a(""), "");
  EXPECT_EQ(Tokenize13a(" \t "), "");
}

// Strings that exercise every rule: entities, digits next to periods, commas
// and dashes, symbols, non-ASCII letters and Unicode whitespace.
std::vector<std::string> AdversarialLines() {
  std::vector<std::string> lines = {
      "\"Quoted\" and 'single' and ``tex'' quotes",
      "&amp;&amp;amp; &quot;&quot; &lt;tag&gt; &#39; &nbsp; & amp;",
      "1,000,000.00 3.14. .5 ,5 5, 5. U.S.A. e.g., i.e.: a.b,c",
      "10-20 -5 5- a-b -- --- 1--2 2-- x.-y",
      "Caf\xC3\xA9, na\xC3\xAFve. \xC3\x89t\xC3\xA9-2014. Stra\xC3\x9F" "e.",
      "\xE2\x80\x94 em dash\xE2\x80\x94 \xE2\x80\x9Csmart\xE2\x80\x9D \xC2\xBFQu\xC3\xA9?",
      "tab\there\rcr nbsp\xC2\xA0" "end ideographic\xE3\x80\x80space",
      "emoji \xF0\x9F\x98\x80." "5 \xE4\xB8\xAD\xE6\x96\x87,\xE5\xAD\x97",
      "(a) [b] {c} <d> $e% ^f_ `g| ~h@ #i* +j= /k\\ :l; ?m!",
      "...,,,..,,  .,.,", "a", ".", "-", "1", "&", "<skipped>", "-\nnext\nline",
      "50%-off 1.5-2.0 3,4-5 $5.-", "x \xC2\x85 y \xE2\x80\xA8 z \x1C w",
  };
  // Deterministic random strings over the characters that matter.
  const std::vector<std::string> alphabet = {
      "a", "Z", "0", "7", ".", ",", "-", " ", "&", ";", "amp", "quot", "lt", "gt",
      "'", "\"", "(", ")", "$", "%", "/", ":", "\t", "\xC3\xA9", "\xC2\xA0", "\xE2\x80\x94",
      "\xE3\x80\x80", "<", ">", "skipped", "\n", "_", "`", "~", "{", "@"};
  uint64_t state = 12345;
  for (int i = 0; i < 3000; ++i) {
    std::string line;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const int length = 1 + static_cast<int>((state >> 33) % 30);
    for (int j = 0; j < length; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      line += alphabet[(state >> 33) % alphabet.size()];
    }
    lines.push_back(line);
  }
  return lines;
}

TEST(Tokenizer13aTest, MatchesSacreBleuOnAdversarialText) {
  const std::vector<std::string> lines = AdversarialLines();
  // NUL separates the inputs: they may hold newlines.
  const std::string path = testing::WriteTempFile("tok13a_in.bin", absl::StrJoin(lines, std::string(1, '\0')));
  const char* script = R"(
import sys
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
tok = Tokenizer13a()
lines = open(sys.argv[1], 'rb').read().decode('utf-8').split('\0')
sys.stdout.buffer.write('\0'.join(tok(line) for line in lines).encode('utf-8'))
)";
  absl::StatusOr<std::string> expected = testing::RunPeerPython(script, {path});
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::vector<std::string> want = absl::StrSplit(*expected, '\0');
  ASSERT_EQ(want.size(), lines.size());
  int mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string got = Tokenize13a(lines[i]);
    if (got != want[i] && ++mismatches <= 10) {
      ADD_FAILURE() << "input [" << lines[i] << "]\n ours [" << got << "]\n sacreBLEU ["
                    << want[i] << "]";
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace tfm
