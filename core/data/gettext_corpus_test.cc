#include "core/data/gettext_corpus.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/data/corpus_split.h"
#include "core/data/pair_reader_testing.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

using ::tfm::testing::ReadPairs;

void WriteCatalog(const std::string& dir, const std::string& name, const std::string& po_body) {
  const std::string po = absl::StrCat(dir, "/", name, ".po");
  std::ofstream(po) << "msgid \"\"\nmsgstr \"Content-Type: text/plain; charset=UTF-8\\n\"\n\n"
                    << po_body;
  ASSERT_EQ(std::system(absl::StrCat("msgfmt -o ", dir, "/", name, ".mo ", po).c_str()), 0);
}

TEST(GettextCorpusTest, DeduplicatesAcrossCatalogsInSortedOrder) {
  const std::string root = absl::StrCat(std::getenv("TEST_TMPDIR"), "/locale");
  const std::string dir = root + "/de/LC_MESSAGES";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  WriteCatalog(dir, "b", "msgid \"Cancel\"\nmsgstr \"Abbrechen\"\n\n"
                         "msgid \"Exit\"\nmsgstr \"Beenden\"\n");
  WriteCatalog(dir, "a", "msgid \"Cancel\"\nmsgstr \"Abbrechen\"\n\n"
                         "msgid \"Exit\"\nmsgstr \"Verlassen\"\n");
  std::ofstream(dir + "/broken.mo") << "not a catalog";

  auto reader = GettextCorpusReader::Open(root, "en", "de");
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto pairs = ReadPairs(reader->get());
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].target, "Abbrechen");
  EXPECT_EQ(pairs[1].target, "Verlassen");  // From a.mo, read first.
  EXPECT_EQ(pairs[2].target, "Beenden");    // Same source, other translation: kept.
  EXPECT_EQ((*reader)->skips().count(kSkipDuplicatePair), 1);
  EXPECT_EQ((*reader)->skips().count(kSkipUnreadableCatalog), 1);
  // The last pair, "Exit" of b.mo: that catalog's string 2 (0 is the header,
  // sorted msgids then: "Cancel", "Exit").
  EXPECT_EQ((*reader)->Where(), dir + "/b.mo:#2");

  auto reversed = GettextCorpusReader::Open(root, "de", "en");
  ASSERT_TRUE(reversed.ok());
  EXPECT_EQ(ReadPairs(reversed->get())[0].source, "Abbrechen");
}

TEST(GettextCorpusTest, BadLanguagesAndMissingDirectories) {
  EXPECT_EQ(GettextCorpusReader::Open("/usr/share/locale", "de", "fr").status().code(),
            absl::StatusCode::kInvalidArgument);
  auto missing = GettextCorpusReader::Open("/no/locale", "en", "de");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/no/locale/de/LC_MESSAGES"), std::string::npos);
}

// The embedded default corpora: the system catalogs of this machine.
void CheckSystemCorpus(const std::string& lang, size_t min_pairs) {
  auto reader = GettextCorpusReader::Open("/usr/share/locale", "en", lang);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const auto pairs = ReadPairs(reader->get());
  std::cout << "en-" << lang << ": " << pairs.size() << " pairs from "
            << (*reader)->catalogs().size() << " catalogs; "
            << (*reader)->skips().Summary().substr(0, 400) << "\n";
  EXPECT_GT(pairs.size(), min_pairs);
  std::set<std::string> seen;
  int placeholders = 0, braces = 0;
  int per_split[4] = {0, 0, 0, 0};
  for (const SentencePair& pair : pairs) {
    EXPECT_TRUE(seen.insert(pair.source + '\0' + pair.target).second) << "duplicate";
    EXPECT_EQ(pair.source.find('\n'), std::string::npos);
    if (pair.source.find("%s") != std::string::npos && pair.target.find("%s") != std::string::npos) {
      ++placeholders;
    }
    if (pair.source.find('{') != std::string::npos && pair.target.find('{') != std::string::npos) {
      ++braces;
    }
    ++per_split[SplitOfSource(pair.source)];
  }
  EXPECT_GT(placeholders, 500);
  EXPECT_GT(braces, 10);
  std::cout << "split train/valid/test: " << per_split[1] << "/" << per_split[2] << "/"
            << per_split[3] << "\n";
  const double n = pairs.size();
  EXPECT_NEAR(per_split[1] / n, 0.90, 0.02);
  EXPECT_NEAR(per_split[2] / n, 0.05, 0.01);
  EXPECT_NEAR(per_split[3] / n, 0.05, 0.01);
}

TEST(GettextCorpusTest, SystemCatalogsEnglishGerman) { CheckSystemCorpus("de", 20000); }
TEST(GettextCorpusTest, SystemCatalogsEnglishFrench) { CheckSystemCorpus("fr", 20000); }

}  // namespace
}  // namespace tfm
