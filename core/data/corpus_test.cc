#include "core/data/corpus.h"

#include "core/data/corpus_split.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;

int64_t CountPairs(const config::CorpusConfig& corpus) {
  auto reader = OpenCorpus(corpus);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return -1;
  SentencePair pair;
  int64_t n = 0;
  while (true) {
    auto more = (*reader)->Next(&pair);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return n;
    ++n;
  }
}

TEST(CorpusSplitTest, HashIsStableAcrossRunsAndMachines) {
  // Pinned values: changing the hash would silently move test sentences
  // into training, so it must never change.
  EXPECT_EQ(StableTextHash(""), 0xf52a15e9a9b5e89bull);
  // Computed independently (Python) from the definition in corpus_split.h.
  EXPECT_EQ(StableTextHash("A group of men are loading cotton onto a truck"),
            0x9d83626c1cc1a41bull);
  EXPECT_EQ(SplitOfSource("A group of men are loading cotton onto a truck"),
            config::CorpusConfig::TRAIN);  // Bucket 411.
  EXPECT_NE(StableTextHash("a"), StableTextHash("b"));
}

TEST(CorpusTest, SplitsPartitionAPlainTextCorpus) {
  config::CorpusConfig corpus;
  corpus.set_name("multi30k");
  corpus.set_format(config::CorpusConfig::PLAIN_TEXT);
  corpus.set_source_path(SharedDataPath("multi30k/train.en.gz"));
  corpus.set_target_path(SharedDataPath("multi30k/train.de.gz"));
  const int64_t all = CountPairs(corpus);
  EXPECT_EQ(all, 29000);
  int64_t parts = 0;
  for (auto split : {config::CorpusConfig::TRAIN, config::CorpusConfig::VALID,
                     config::CorpusConfig::TEST}) {
    corpus.set_split(split);
    const int64_t n = CountPairs(corpus);
    EXPECT_GT(n, split == config::CorpusConfig::TRAIN ? 25000 : 1000);
    parts += n;
  }
  EXPECT_EQ(parts, all);
}

TEST(CorpusTest, ConfigErrorsNameTheCorpus) {
  config::CorpusConfig corpus;
  corpus.set_name("broken");
  corpus.set_format(config::CorpusConfig::PLAIN_TEXT);
  auto reader = OpenCorpus(corpus);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reader.status().message().find("broken"), std::string::npos);
  corpus.set_format(config::CorpusConfig::PTB_MRG);
  EXPECT_FALSE(OpenCorpus(corpus).ok());
  corpus.set_format(config::CorpusConfig::GETTEXT_MO);
  corpus.set_source_lang("en");
  corpus.set_target_lang("fr");
  corpus.set_split(config::CorpusConfig::TEST);
  EXPECT_GT(CountPairs(corpus), 1000);  // The default root, /usr/share/locale.
}

// The check before a run finds the data without reading it, by format, and
// names what is missing.
TEST(CorpusTest, CheckCorpusPresentNamesWhatIsMissing) {
  config::CorpusConfig corpus;
  corpus.set_name("m30k");
  corpus.set_format(config::CorpusConfig::PLAIN_TEXT);
  corpus.set_source_path(SharedDataPath("multi30k/train.en.gz"));
  corpus.set_target_path(SharedDataPath("multi30k/train.de.gz"));
  absl::StatusOr<std::string> found = CheckCorpusPresent(corpus);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_NE(found->find("train.de.gz"), std::string::npos) << *found;

  corpus.set_target_path(SharedDataPath("multi30k/no_such_file.de"));
  found = CheckCorpusPresent(corpus);
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("no_such_file.de"), std::string::npos);
  EXPECT_NE(found.status().message().find("m30k"), std::string::npos);
  // A directory is called one; a relative path says where it was looked for.
  corpus.set_target_path(::testing::TempDir());
  found = CheckCorpusPresent(corpus);
  EXPECT_NE(found.status().message().find("is a directory, not a file"), std::string::npos)
      << found.status();
  corpus.set_target_path("relative/no_such.de");
  found = CheckCorpusPresent(corpus);
  EXPECT_NE(found.status().message().find("'relative/no_such.de' not found (looked for /"),
            std::string::npos)
      << found.status();
  EXPECT_NE(found.status().message().find("relative/no_such.de: a relative path is taken from"),
            std::string::npos)
      << found.status();

  // Gettext catalogs are found under the non-English language, whichever
  // side it is on (DE -> EN reads the de catalogs too).
  config::CorpusConfig gettext;
  gettext.set_name("catalogs");
  gettext.set_format(config::CorpusConfig::GETTEXT_MO);
  gettext.set_source_lang("de");
  gettext.set_target_lang("en");
  found = CheckCorpusPresent(gettext);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_NE(found->find("gettext catalogs in /usr/share/locale/de/LC_MESSAGES"),
            std::string::npos)
      << *found;
  gettext.set_source_lang("xx-no-such-language");
  gettext.set_target_lang("en");
  found = CheckCorpusPresent(gettext);
  EXPECT_EQ(found.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("catalogs"), std::string::npos);
}

}  // namespace
}  // namespace tfm
