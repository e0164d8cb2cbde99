#include "core/data/mo_catalog.h"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::WriteTempFile;

void PutWord(uint32_t value, bool big_endian, std::string* out) {
  for (int i = 0; i < 4; ++i) {
    const int shift = big_endian ? 24 - 8 * i : 8 * i;
    out->push_back(static_cast<char>((value >> shift) & 0xFF));
  }
}

// A .mo catalog written by hand in either byte order (the layout of the GNU
// gettext manual), without a hash table.
std::string BuildMo(const std::vector<std::pair<std::string, std::string>>& entries,
                    bool big_endian) {
  const uint32_t n = entries.size();
  const uint32_t originals = 28, translations = originals + 8 * n;
  uint32_t strings = translations + 8 * n;
  std::string header, tables_o, tables_t, data;
  for (uint32_t magic_or_field :
       {0x950412deu, 0u, n, originals, translations, 0u, strings}) {
    PutWord(magic_or_field, big_endian, &header);
  }
  for (const auto& [id, str] : entries) {
    PutWord(id.size(), big_endian, &tables_o);
    PutWord(strings + data.size(), big_endian, &tables_o);
    data += id;
    data.push_back('\0');
  }
  for (const auto& [id, str] : entries) {
    PutWord(str.size(), big_endian, &tables_t);
    PutWord(strings + data.size(), big_endian, &tables_t);
    data += str;
    data.push_back('\0');
  }
  return header + tables_o + tables_t + data;
}

const std::vector<std::pair<std::string, std::string>> kEntries = {
    {"", "Content-Type: text/plain; charset=UTF-8\n"},
    {"%s: file not found", "%s: Datei nicht gefunden"},
    {"menu\x04Open", "\xC3\x96" "ffnen"},  // Context stripped; "Öffnen".
    {"%d file\0%d files", "%d Datei\0%d Dateien"},
    {"Untranslated", ""},
    {"Hello {name},\nwelcome", "Hallo {name},\nwillkommen"},
    {"Broken", "kaputt \xFF"},
};

void ExpectCatalogContents(const std::vector<SentencePair>& pairs, const SkipReport& skips) {
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].source, "%s: file not found");
  EXPECT_EQ(pairs[0].target, "%s: Datei nicht gefunden");
  EXPECT_EQ(pairs[1].source, "Open");
  EXPECT_EQ(pairs[1].target, "\xC3\x96" "ffnen");
  EXPECT_EQ(pairs[2].source, "Hello {name}, welcome");
  EXPECT_EQ(pairs[2].target, "Hallo {name}, willkommen");
  EXPECT_EQ(skips.count(kSkipMoHeader), 1);
  EXPECT_EQ(skips.count(kSkipPlural), 1);
  EXPECT_EQ(skips.count(kSkipUntranslated), 1);
  EXPECT_EQ(skips.count(kSkipInvalidUtf8), 1);
}

std::vector<std::pair<std::string, std::string>> WithNuls() {
  // The literals above lose their embedded NULs through const char*.
  auto entries = kEntries;
  entries[3] = {std::string("%d file\0%d files", 16), std::string("%d Datei\0%d Dateien", 19)};
  return entries;
}

TEST(MoCatalogTest, ReadsLittleEndian) {
  SkipReport skips;
  auto pairs = ParseMoCatalog(BuildMo(WithNuls(), false), "le.mo", &skips);
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ExpectCatalogContents(*pairs, skips);
}

TEST(MoCatalogTest, ReadsBigEndian) {
  SkipReport skips;
  auto pairs = ParseMoCatalog(BuildMo(WithNuls(), true), "be.mo", &skips);
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ExpectCatalogContents(*pairs, skips);
}

TEST(MoCatalogTest, ReadsWhatMsgfmtWrites) {
  const std::string po = WriteTempFile("test.po", R"(msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\n"

msgid "Save %1$s to {path}?"
msgstr "%1$s unter {path} speichern?"

msgctxt "button"
msgid "Quit"
msgstr "Beenden"

msgid "one item"
msgid_plural "%d items"
msgstr[0] "ein Element"
msgstr[1] "%d Elemente"

msgid "not yet"
msgstr ""
)");
  const std::string mo = po.substr(0, po.size() - 3) + ".mo";
  ASSERT_EQ(std::system(absl::StrCat("msgfmt -o ", mo, " ", po).c_str()), 0)
      << "msgfmt (Debian package gettext) is needed; run tools/setup.sh";
  SkipReport skips;
  auto pairs = ReadMoCatalog(mo, &skips);
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  ASSERT_EQ(pairs->size(), 2u);
  // msgfmt sorts by msgid (with context): "Save..." < "button\x04Quit".
  EXPECT_EQ((*pairs)[0].source, "Save %1$s to {path}?");
  EXPECT_EQ((*pairs)[0].target, "%1$s unter {path} speichern?");
  EXPECT_EQ((*pairs)[1].source, "Quit");
  EXPECT_EQ((*pairs)[1].target, "Beenden");
  EXPECT_EQ(skips.count(kSkipPlural), 1);
  EXPECT_EQ(skips.count(kSkipMoHeader), 1);
}

TEST(MoCatalogTest, CorruptCatalogsAreErrorsNamingThePath) {
  SkipReport skips;
  std::string mo = BuildMo(WithNuls(), false);
  EXPECT_FALSE(ParseMoCatalog("short", "tiny.mo", &skips).ok());
  std::string bad_magic = mo;
  bad_magic[0] = 'X';
  auto status = ParseMoCatalog(bad_magic, "magic.mo", &skips).status();
  EXPECT_NE(status.message().find("magic.mo"), std::string::npos) << status;
  // Every truncation is rejected or read safely, never a crash.
  for (size_t cut = 0; cut < mo.size(); ++cut) {
    (void)ParseMoCatalog(mo.substr(0, cut), "cut.mo", &skips);
  }
  auto truncated = ParseMoCatalog(mo.substr(0, mo.size() - 10), "cut.mo", &skips);
  EXPECT_FALSE(truncated.ok());
  auto missing = ReadMoCatalog("/no/such/catalog.mo", &skips);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/no/such/catalog.mo"), std::string::npos);
}

TEST(MoCatalogTest, ReadsARealSystemCatalog) {
  SkipReport skips;
  auto pairs = ReadMoCatalog("/usr/share/locale/de/LC_MESSAGES/coreutils.mo", &skips);
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  EXPECT_GT(pairs->size(), 500u);
  int with_placeholder = 0;
  for (const SentencePair& pair : *pairs) {
    if (pair.source.find("%s") != std::string::npos &&
        pair.target.find("%s") != std::string::npos) {
      ++with_placeholder;
    }
  }
  EXPECT_GT(with_placeholder, 100);
}

}  // namespace
}  // namespace tfm
