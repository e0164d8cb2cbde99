// BLEU and chrF against sacreBLEU 2.4.3 itself, run live: its command line
// (reading the same files) must print the same score lines, and its API the
// same doubles.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/metrics/bleu.h"
#include "core/metrics/chrf.h"
#include "core/metrics/text_lines.h"
#include "core/metrics/text_report.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::RunPeerPython;
using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

// Runs sacreBLEU's command line with two decimals and its API; prints the
// BLEU and chrF text lines, then both scores' exact doubles.
constexpr char kSacreBleuScript[] = R"(
import subprocess, sys
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.utils import smart_open
hyp, refs = sys.argv[1], sys.argv[2:]
cli = subprocess.run([sys.executable, '-m', 'sacrebleu'] + refs +
                     ['-i', hyp, '-f', 'text', '-w', '2', '-m', 'bleu', 'chrf'],
                     check=True, capture_output=True, text=True)
for line in cli.stdout.splitlines():
    print(line.strip())
read = lambda path: [line.rstrip() for line in smart_open(path)]
h, r = read(hyp), [read(path) for path in refs]
print(repr(BLEU().corpus_score(h, r).score))
print(repr(CHRF().corpus_score(h, r).score))
)";

struct PeerResult {
  std::string bleu_line;
  std::string chrf_line;
  double bleu = -1;
  double chrf = -1;
};

PeerResult RunSacreBleu(const std::string& hyp, const std::vector<std::string>& refs) {
  std::vector<std::string> args = {hyp};
  args.insert(args.end(), refs.begin(), refs.end());
  absl::StatusOr<std::string> output = RunPeerPython(kSacreBleuScript, args);
  EXPECT_TRUE(output.ok()) << output.status();
  PeerResult result;
  if (!output.ok()) return result;
  const std::vector<std::string> lines = absl::StrSplit(*output, '\n', absl::SkipEmpty());
  EXPECT_EQ(lines.size(), 4u) << *output;
  if (lines.size() != 4) return result;
  result.bleu_line = lines[0];
  result.chrf_line = lines[1];
  result.bleu = std::strtod(lines[2].c_str(), nullptr);
  result.chrf = std::strtod(lines[3].c_str(), nullptr);
  return result;
}

// sacreBLEU's command line puts the signature into the score line:
// "BLEU|nrefs:1|...|version:2.4.3 = 34.12 ...".
std::string WithSignature(const std::string& line, const std::string& name,
                          const std::string& signature) {
  EXPECT_TRUE(absl::StartsWith(line, name + " = ")) << line;
  return absl::StrCat(name, "|", signature, line.substr(name.size()));
}

void ExpectSameAsSacreBleu(const std::string& hyp, const std::vector<std::string>& refs) {
  absl::StatusOr<FileScores> ours = ScoreFiles(hyp, refs, /*with_chrf=*/true);
  ASSERT_TRUE(ours.ok()) << ours.status();
  const PeerResult peer = RunSacreBleu(hyp, refs);
  const int n = static_cast<int>(refs.size());
  EXPECT_EQ(WithSignature(ours->bleu.Format(), "BLEU", BleuSignature(n)), peer.bleu_line);
  EXPECT_EQ(WithSignature(ours->chrf.Format(), "chrF2", ChrfSignature(n)), peer.chrf_line);
  // Same doubles, not just the same rounding.
  EXPECT_EQ(ours->bleu.score, peer.bleu);
  EXPECT_EQ(ours->chrf.score, peer.chrf);
}

std::vector<std::string> ReadShared(const std::string& name) {
  absl::StatusOr<std::vector<std::string>> lines = ReadTextLines(SharedDataPath(name));
  EXPECT_TRUE(lines.ok()) << lines.status();
  return lines.ok() ? *lines : std::vector<std::string>{};
}

// A deterministic "system output": each line edited in one of several ways
// (words dropped, swapped, replaced, truncated, emptied, or kept).
std::vector<std::string> Perturb(const std::vector<std::string>& lines, uint64_t seed) {
  std::vector<std::string> out;
  uint64_t state = seed;
  auto next = [&state](uint64_t range) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % range;
  };
  for (const std::string& line : lines) {
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    switch (next(7)) {
      case 0:
        if (!words.empty()) words.erase(words.begin() + next(words.size()));
        break;
      case 1:
        if (words.size() > 2) std::swap(words[0], words[1 + next(words.size() - 1)]);
        break;
      case 2:
        if (!words.empty()) words[next(words.size())] = "etwas";
        break;
      case 3:
        words.resize(words.size() / 2);
        break;
      case 4:
        if (next(5) == 0) words.clear();
        break;
      case 5:
        words.push_back(words.empty() ? "und" : words.front());
        break;
      default:
        break;
    }
    out.push_back(absl::StrJoin(words, " "));
  }
  return out;
}

std::string WriteLines(const std::string& name, const std::vector<std::string>& lines) {
  return WriteTempFile(name, absl::StrJoin(lines, "\n") + "\n");
}

TEST(BleuTest, Multi30kValidationPerturbedMatchesSacreBleu) {
  const std::vector<std::string> ref = ReadShared("multi30k/val.de.gz");
  ASSERT_EQ(ref.size(), 1014u);
  const std::string hyp = WriteLines("val_hyp.de", Perturb(ref, 7));
  // The reference is read straight from the gzip file by both sides.
  ExpectSameAsSacreBleu(hyp, {SharedDataPath("multi30k/val.de.gz")});
}

TEST(BleuTest, Multi30kTestFrenchTwoReferencesMatchesSacreBleu) {
  const std::vector<std::string> ref = ReadShared("multi30k/test_2016_flickr.fr.gz");
  ASSERT_EQ(ref.size(), 1000u);
  const std::string ref1 = WriteLines("test_ref1.fr", ref);
  const std::string ref2 = WriteLines("test_ref2.fr", Perturb(ref, 99));
  const std::string hyp = WriteLines("test_hyp.fr", Perturb(ref, 3));
  ExpectSameAsSacreBleu(hyp, {ref1, ref2});
}

TEST(BleuTest, UnrelatedLanguagesGiveLowScoresLikeSacreBleu) {
  // English output scored against German: few matches, exp smoothing kicks in.
  ExpectSameAsSacreBleu(SharedDataPath("multi30k/val.en.gz"),
                        {SharedDataPath("multi30k/val.de.gz")});
}

TEST(BleuTest, AdversarialTextMatchesSacreBleu) {
  const std::vector<std::string> ref = {
      "\"Hello,\" she said &amp; left.",
      "It costs $1,000.50 (about 900 &euro;).",
      "",
      "A 5-year-old's toy; U.S. made.",
      "Caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 \xE2\x80\x9Cquoted\xE2\x80\x9D",
      "x",
      "trailing tab\t",
      "nbsp\xC2\xA0inside and at end\xC2\xA0",
      "&lt;b&gt;bold&lt;/b&gt; &quot;q&quot;",
      "3.14, 2.71 and 1,5.",
      "Crlf line\r",
      "- - -",
  };
  const std::vector<std::string> hyp = {
      "\"Hello\", she said & left .",
      "It costs $1,000.5 (about 900 \xE2\x82\xAC).",
      "nothing here",
      "A 5 year old's toy; U.S. made.",
      "Cafe naive - \"quoted\"",
      "",
      "trailing tab",
      "nbsp inside and at end",
      "<b>bold</b> \"q\"",
      "3.14 , 2.71 and 1,5 .",
      "Crlf line",
      "---",
  };
  ExpectSameAsSacreBleu(WriteLines("adv_hyp.txt", hyp), {WriteLines("adv_ref.txt", ref)});
}

TEST(BleuTest, ShortLinesAndNoTrailingNewlineMatchSacreBleu) {
  // Lines shorter than four tokens leave higher orders with no n-grams.
  const std::string ref = WriteTempFile("short_ref.txt", "a\nb c\n.\nd e f");
  const std::string hyp = WriteTempFile("short_hyp.txt", "a\nb\n.\nd e f");
  ExpectSameAsSacreBleu(hyp, {ref});
}

TEST(BleuTest, IdenticalTextScoresOneHundred) {
  absl::StatusOr<BleuScore> bleu =
      CorpusBleu({"The cat sat on the mat ."}, {{"The cat sat on the mat ."}});
  ASSERT_TRUE(bleu.ok());
  EXPECT_EQ(bleu->Format(),
            "BLEU = 100.00 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 7 "
            "ref_len = 7)");
  absl::StatusOr<ChrfScore> chrf = CorpusChrf({"Hallo Welt"}, {{"Hallo Welt"}});
  ASSERT_TRUE(chrf.ok());
  EXPECT_EQ(chrf->Format(), "chrF2 = 100.00");
}

TEST(BleuTest, HandComputedSmoothingAndBrevity) {
  // hyp "a b c" vs ref "a b d e": 1-grams 2/3, 2-grams 1/2, 3-grams 0/1,
  // 4-grams none. 'exp' smoothing gives p3 = 100/(2*1) = 50, and p4 (no
  // 4-grams at all) stays 0, so the score is 0; BP = exp(1 - 4/3).
  absl::StatusOr<BleuScore> bleu = CorpusBleu({"a b c"}, {{"a b d e"}});
  ASSERT_TRUE(bleu.ok());
  EXPECT_EQ(bleu->Format(),
            "BLEU = 0.00 66.7/50.0/50.0/0.0 (BP = 0.717 ratio = 0.750 hyp_len = 3 ref_len = 4)");
  // With multiple references the closest length wins, the shorter on ties:
  // hyp length 3, refs of length 2 and 4 -> 2.
  absl::StatusOr<BleuScore> closest = CorpusBleu({"a b c"}, {{"a b"}, {"a b c d"}});
  ASSERT_TRUE(closest.ok());
  EXPECT_EQ(closest->ref_len, 2);
  EXPECT_EQ(BleuSignature(1), "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.4.3");
  EXPECT_EQ(ChrfSignature(2), "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.4.3");
}

TEST(BleuTest, ErrorsNameFilesAndCounts) {
  const std::string ref = WriteTempFile("err_ref.txt", "a\nb\nc\n");
  const std::string hyp = WriteTempFile("err_hyp.txt", "a\nb\n");
  absl::StatusOr<FileScores> mismatch = ScoreFiles(hyp, {ref}, false);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.status().message(),
            absl::StrCat("line counts differ: hypothesis file '", hyp, "' has 2 lines, ",
                         "reference file '", ref, "' has 3"));
  absl::StatusOr<FileScores> missing = ScoreFiles(hyp, {"/nonexistent/ref.de"}, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), "/nonexistent/ref.de"));
  const std::string bad = WriteTempFile("err_bad.txt", "ok\nbad \xFF byte\n");
  absl::StatusOr<FileScores> invalid = ScoreFiles(bad, {ref}, false);
  ASSERT_FALSE(invalid.ok());
  EXPECT_TRUE(absl::StrContains(invalid.status().message(), bad + ":2:"));
  EXPECT_FALSE(CorpusBleu({"a"}, {}).ok());
  EXPECT_FALSE(CorpusChrf({"a", "b"}, {{"a"}}).ok());
}

// The lines tools/bleu and `evaluate` score: sacreBLEU's, without trailing
// whitespace (Unicode's too, "\r" included); leading whitespace stays.
TEST(BleuTest, StrippedLinesLoseOnlyTrailingWhitespace) {
  const std::string path = WriteTempFile("stripped.txt", "a b \r\n\tc\xC2\xA0\n\nd");
  absl::StatusOr<std::vector<std::string>> raw = ReadTextLines(path);
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(*raw, (std::vector<std::string>{"a b \r", "\tc\xC2\xA0", "", "d"}));
  absl::StatusOr<std::vector<std::string>> stripped = ReadStrippedTextLines(path);
  ASSERT_TRUE(stripped.ok()) << stripped.status();
  EXPECT_EQ(*stripped, (std::vector<std::string>{"a b", "\tc", "", "d"}));
  const std::string bad = WriteTempFile("stripped_bad.txt", "ok\nbad \xFF\n");
  EXPECT_TRUE(absl::StrContains(ReadStrippedTextLines(bad).status().message(),
                                bad + ":2: line is not valid UTF-8"));
}

}  // namespace
}  // namespace tfm
