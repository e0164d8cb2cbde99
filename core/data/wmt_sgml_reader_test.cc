#include "core/data/wmt_sgml_reader.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::WriteTempFile;

constexpr char kSource[] = R"(<srcset setid="newstest2014" srclang="any">
<doc sysid="ref" docid="1012-bbc" genre="news" origlang="en">
<hl>
<seg id="1">Gutach: Increased safety for pedestrians</seg>
</hl>
<p>
<seg id="2">They are not even 100 metres apart &amp; &quot;ok&quot; &lt;3 &#233;t&#xE9; &bogus; &#0;</seg>
<seg id="3">   </seg>
<seg id="4">Broken segment without end
<seg id="5">Last one</seg>
</p>
</doc>
</srcset>
)";

constexpr char kReference[] = R"(<refset setid="newstest2014" srclang="any" trglang="de">
<doc sysid="ref" docid="1012-bbc" genre="news" origlang="en">
<hl>
<seg id="1">Gutach: Noch mehr Sicherheit für Fußgänger</seg>
</hl>
<p>
<seg id="2">Sie stehen keine 100 Meter voneinander entfernt</seg>
<seg id="3">Leer links</seg>
<seg id="4">Kaputt links</seg>
<seg id="5">Die letzte</seg>
</p>
</doc>
</refset>
)";

TEST(SgmlEntitiesTest, DecodesNamedAndNumericEntities) {
  EXPECT_EQ(DecodeSgmlEntities("a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;"),
            "a & b <c> \"d\" 'e'");
  EXPECT_EQ(DecodeSgmlEntities("caf&#233; caf&#xe9; &#x1F600;"),
            "caf\xC3\xA9 caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(DecodeSgmlEntities("&bogus; &#xD800; &#; & alone &amp"),
            "&bogus; &#xD800; &#; & alone &amp");
}

TEST(WmtSgmlReaderTest, PairsSegmentsAndSkipsBadOnes) {
  auto reader = WmtSgmlReader::Open(WriteTempFile("src.sgm", kSource),
                                    WriteTempFile("ref.sgm", kReference));
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<SentencePair> pairs;
  SentencePair pair;
  while (true) {
    auto more = (*reader)->Next(&pair);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    pairs.push_back(pair);
  }
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].source, "Gutach: Increased safety for pedestrians");
  EXPECT_EQ(pairs[0].target, "Gutach: Noch mehr Sicherheit für Fußgänger");
  EXPECT_EQ(pairs[1].source,
            "They are not even 100 metres apart & \"ok\" <3 \xC3\xA9t\xC3\xA9 &bogus; &#0;");
  EXPECT_EQ(pairs[2].source, "Last one");
  EXPECT_EQ(pairs[2].target, "Die letzte");
  // The last pair's <seg> is the source file's line 10.
  const std::string where = (*reader)->Where();
  EXPECT_TRUE(absl::EndsWith(where, "src.sgm:10")) << where;
  EXPECT_EQ((*reader)->skips().count(kSkipEmpty), 1);
  EXPECT_EQ((*reader)->skips().count(kSkipMalformedSeg), 1);
}

absl::Status ReadToEnd(const std::string& source, const std::string& target) {
  auto reader = WmtSgmlReader::Open(source, target);
  if (!reader.ok()) return reader.status();
  SentencePair pair;
  while (true) {
    auto more = (*reader)->Next(&pair);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
  }
}

TEST(WmtSgmlReaderTest, MisalignedFilesAreErrorsNamingBoth) {
  const std::string source = WriteTempFile("a.sgm", kSource);
  const std::string shorter = WriteTempFile(
      "b.sgm", "<doc docid=\"1012-bbc\">\n<seg id=\"1\">x</seg>\n<seg id=\"2\">y</seg>\n</doc>\n");
  absl::Status status = ReadToEnd(source, shorter);
  EXPECT_NE(status.message().find(source + " has 5 segments"), std::string::npos) << status;
  EXPECT_NE(status.message().find(shorter + " has 2 segments"), std::string::npos) << status;

  const std::string other_ids = WriteTempFile(
      "c.sgm", "<doc docid=\"other\">\n<seg id=\"1\">x</seg>\n</doc>\n");
  status = ReadToEnd(source, other_ids);
  EXPECT_NE(status.message().find("\"other\""), std::string::npos) << status;
  EXPECT_NE(ReadToEnd(source, "/no/ref.sgm").message().find("/no/ref.sgm"), std::string::npos);
}

}  // namespace
}  // namespace tfm
