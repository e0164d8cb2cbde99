#include "tasks/parsing/ptb_corpus.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/data/corpus.h"
#include "runtime/train/training_data.h"
#include "tasks/parsing/linearize.h"
#include "tasks/parsing/tree.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

config::CorpusConfig Corpus(const std::string& root, int first, int last) {
  config::CorpusConfig corpus;
  corpus.set_name("wsj");
  corpus.set_format(config::CorpusConfig::PTB_MRG);
  corpus.set_root(root);
  corpus.set_first_document(first);
  corpus.set_last_document(last);
  return corpus;
}

std::vector<SentencePair> ReadAll(const config::CorpusConfig& corpus) {
  auto reader = OpenCorpus(corpus);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::vector<SentencePair> pairs;
  if (!reader.ok()) return pairs;
  SentencePair pair;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&pair);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) return pairs;
    pairs.push_back(pair);
  }
}

// wsj_0001's two pairs with leaves written as `leaves` says.
std::vector<SentencePair> FirstDocument(config::CorpusConfig::TreeLeaves leaves) {
  config::CorpusConfig corpus = Corpus(SharedDataPath("ptb_sample"), 1, 1);
  corpus.set_tree_leaves(leaves);
  return ReadAll(corpus);
}

TEST(PtbCorpusTest, PairsWordsWithLinearisedTrees) {
  const std::string root = SharedDataPath("ptb_sample");
  const std::vector<SentencePair> pairs = ReadAll(Corpus(root, 1, 1));
  ASSERT_EQ(pairs.size(), 2u);  // wsj_0001 holds two sentences.
  EXPECT_EQ(pairs[0].source,
            "Pierre Vinken , 61 years old , will join the board as a nonexecutive director Nov. "
            "29 .");
  // Function tags stripped (NP-SBJ, PP-CLR, NP-TMP), punctuation kept as tags.
  EXPECT_EQ(pairs[0].target,
            "(S (NP (NP XX XX )NP , (ADJP (NP XX XX )NP XX )ADJP , )NP (VP XX (VP XX (NP XX XX )NP "
            "(PP XX (NP XX XX XX )NP )PP (NP XX XX )NP )VP )VP . )S");
  // The target spells a tree over the source's words.
  const std::vector<std::string> words = absl::StrSplit(pairs[1].source, ' ');
  const std::vector<std::string> tokens = absl::StrSplit(pairs[1].target, ' ');
  EXPECT_EQ(TreeWords(Delinearize(tokens, words)), words);
}

TEST(PtbCorpusTest, WordLeavesWriteTheWordsThemselves) {
  const std::vector<SentencePair> pairs = FirstDocument(config::CorpusConfig::WORDS);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].target,
            "(S (NP (NP Pierre Vinken )NP , (ADJP (NP 61 years )NP old )ADJP , )NP (VP will (VP "
            "join (NP the board )NP (PP as (NP a nonexecutive director )NP )PP (NP Nov. 29 )NP )VP "
            ")VP . )S");
  // The same trees as with placeholders, leaves aside.
  const std::vector<SentencePair> placeholders = FirstDocument(config::CorpusConfig::PLACEHOLDERS);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::vector<std::string> words = absl::StrSplit(pairs[i].source, ' ');
    EXPECT_EQ(Delinearize(absl::StrSplit(pairs[i].target, ' '), words, nullptr, LeafStyle::kWord),
              Delinearize(absl::StrSplit(placeholders[i].target, ' '), words));
  }
}

TEST(PtbCorpusTest, PosTagLeavesWriteEveryTag) {
  const std::vector<SentencePair> pairs = FirstDocument(config::CorpusConfig::POS_TAGS);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].target,
            "(S (NP (NP NNP NNP )NP , (ADJP (NP CD NNS )NP JJ )ADJP , )NP (VP MD (VP VB (NP DT NN "
            ")NP (PP IN (NP DT JJ NN )NP )PP (NP NNP CD )NP )VP )VP . )S");
  // Back to a tree: the same brackets as with placeholders, tagged.
  const std::vector<SentencePair> placeholders = FirstDocument(config::CorpusConfig::PLACEHOLDERS);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::vector<std::string> words = absl::StrSplit(pairs[i].source, ' ');
    const Tree tagged =
        Delinearize(absl::StrSplit(pairs[i].target, ' '), words, nullptr, LeafStyle::kPosTag);
    EXPECT_EQ(TreeWords(tagged), words);
    EXPECT_EQ(Linearize(tagged, LeafStyle::kPlaceholder),
              static_cast<std::vector<std::string>>(absl::StrSplit(placeholders[i].target, ' ')));
  }
}

// subtree_min_words: each whole tree, then its constituents of at least
// that many words below the root, in preorder.
TEST(PtbCorpusTest, SubtreesFollowTheirTreeInPreorder) {
  config::CorpusConfig corpus = Corpus(SharedDataPath("ptb_sample"), 1, 1);
  const std::vector<SentencePair> whole = ReadAll(corpus);
  corpus.set_subtree_min_words(3);
  const std::vector<SentencePair> pairs = ReadAll(corpus);
  ASSERT_EQ(whole.size(), 2u);
  ASSERT_GT(pairs.size(), 7u);
  EXPECT_EQ(pairs[0].source, whole[0].source);
  EXPECT_EQ(pairs[0].target, whole[0].target);
  // (S (NP (NP Pierre Vinken) , (ADJP (NP 61 years) old) ,) (VP will (VP
  // join (NP the board) (PP as (NP a nonexecutive director)) (NP Nov. 29)))
  // .): the two-word NPs are left out.
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"Pierre Vinken , 61 years old ,", "(NP (NP XX XX )NP , (ADJP (NP XX XX )NP XX )ADJP , )NP"},
      {"61 years old", "(ADJP (NP XX XX )NP XX )ADJP"},
      {"will join the board as a nonexecutive director Nov. 29",
       "(VP XX (VP XX (NP XX XX )NP (PP XX (NP XX XX XX )NP )PP (NP XX XX )NP )VP )VP"},
      {"join the board as a nonexecutive director Nov. 29",
       "(VP XX (NP XX XX )NP (PP XX (NP XX XX XX )NP )PP (NP XX XX )NP )VP"},
      {"as a nonexecutive director", "(PP XX (NP XX XX XX )NP )PP"},
      {"a nonexecutive director", "(NP XX XX XX )NP"},
  };
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(pairs[1 + i].source, expected[i].first) << i;
    EXPECT_EQ(pairs[1 + i].target, expected[i].second) << i;
  }
  EXPECT_EQ(pairs[1 + expected.size()].source, whole[1].source);
  // Every pair of the document: a tree over its own words, and the words of
  // a subtree run inside its sentence's.
  std::string sentence;
  for (const SentencePair& pair : pairs) {
    const std::vector<std::string> words = absl::StrSplit(pair.source, ' ');
    EXPECT_EQ(TreeWords(Delinearize(absl::StrSplit(pair.target, ' '), words)), words);
    EXPECT_GE(words.size(), 3u);
    if (pair.source == whole[0].source || pair.source == whole[1].source) {
      sentence = " " + pair.source + " ";
    } else {
      EXPECT_TRUE(absl::StrContains(sentence, " " + pair.source + " ")) << pair.source;
    }
  }
}

// Each pair names the line its tree starts on, and says when it is a subtree.
TEST(PtbCorpusTest, PairsNameTheirTreesLine) {
  config::CorpusConfig corpus = Corpus(SharedDataPath("ptb_sample"), 1, 1);
  corpus.set_subtree_min_words(3);
  absl::StatusOr<std::unique_ptr<PairReader>> reader = OpenCorpus(corpus);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> wheres;
  SentencePair pair;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&pair);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    wheres.push_back((*reader)->Where());
  }
  ASSERT_GT(wheres.size(), 2u);
  const std::string file = SharedDataPath("ptb_sample/wsj_0001.mrg");
  EXPECT_EQ(wheres[0], file + ":2");
  EXPECT_EQ(wheres[1], file + ":2 (a subtree)");
  EXPECT_EQ(wheres.back(), file + ":17 (a subtree)");
}

TEST(PtbCorpusTest, DocumentRangesSplitTheSample) {
  const std::string root = SharedDataPath("ptb_sample");
  auto train = PtbCorpusFiles(Corpus(root, 1, 169), root);
  auto test = PtbCorpusFiles(Corpus(root, 180, 189), root);
  ASSERT_TRUE(train.ok() && test.ok());
  EXPECT_EQ(train->front(), root + "/wsj_0001.mrg");
  EXPECT_EQ(train->back(), root + "/wsj_0169.mrg");
  EXPECT_EQ(test->size(), 10u);
  EXPECT_EQ(test->front(), root + "/wsj_0180.mrg");
  // Every sentence of the range, and no other: counted from the files'
  // top-level brackets.
  int64_t trees = 0;
  for (const std::string& path : *test) {
    absl::StatusOr<std::string> count = testing::RunPeerPython(R"(
import sys
depth = trees = 0
for c in open(sys.argv[1]).read():
    if c == '(':
        trees += depth == 0
        depth += 1
    elif c == ')':
        depth -= 1
print(trees)
)", {path});
    ASSERT_TRUE(count.ok()) << count.status();
    trees += std::stoll(*count);
  }
  EXPECT_EQ(static_cast<int64_t>(ReadAll(Corpus(root, 180, 189)).size()), trees);
}

// A config's leaf style is its first training treebank's; an unset
// tree_leaves and an explicit PLACEHOLDERS are the same style (ensemble
// members are compared by it).
TEST(PtbCorpusTest, ConfigLeafStyleReadsTheFirstTrainingTreebank) {
  config::TaskConfig config;
  EXPECT_EQ(ConfigLeafStyle(config), LeafStyle::kPlaceholder);
  config.mutable_data()->add_train();
  EXPECT_EQ(ConfigLeafStyle(config), LeafStyle::kPlaceholder);
  config.mutable_data()->mutable_train(0)->set_tree_leaves(config::CorpusConfig::PLACEHOLDERS);
  EXPECT_EQ(ConfigLeafStyle(config), LeafStyle::kPlaceholder);
  config.mutable_data()->mutable_train(0)->set_tree_leaves(config::CorpusConfig::POS_TAGS);
  EXPECT_EQ(ConfigLeafStyle(config), LeafStyle::kPosTag);
}

TEST(PtbCorpusTest, FindsSectionFoldersAndNamesWhatIsMissing) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/treebank";
  for (const char* file : {"02/wsj_0201.mrg", "02/wsj_0200.mrg", "23/wsj_2300.mrg", "wsj_0005.mrg",
                           "02/notes.txt", "wsj_02.mrg"}) {
    std::filesystem::create_directories(std::filesystem::path(root + "/" + file).parent_path());
    WriteTempFile(std::string("treebank/") + file, "( (S (NN x)) )\n");
  }
  auto files = PtbCorpusFiles(Corpus(root, 5, 299), root);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{root + "/wsj_0005.mrg", root + "/02/wsj_0200.mrg",
                                              root + "/02/wsj_0201.mrg"}));
  auto none = PtbCorpusFiles(Corpus(root, 2400, 2499), root);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(absl::StrContains(none.status().message(), "2400..2499")) << none.status();
  auto missing = OpenCorpus(Corpus(root + "/nowhere", 0, 9999));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), root + "/nowhere"));

  // The check before a run says what it found, and warns where an explicit
  // range is not all there; the default range (every document) does not.
  absl::StatusOr<std::string> described = DescribePtbCorpus(Corpus(root, 5, 299));
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_TRUE(
      absl::StrContains(*described, "3 documents (wsj_0005.mrg .. wsj_0201.mrg) under " + root))
      << *described;
  EXPECT_TRUE(absl::StrContains(
      *described, "warning: 292 of the 295 documents 5..299 are missing (the first: wsj_0006.mrg)"))
      << *described;
  config::CorpusConfig everything = Corpus(root, 0, 9999);
  everything.clear_last_document();
  described = DescribePtbCorpus(everything);
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_FALSE(absl::StrContains(*described, "missing")) << *described;
}

// Subtrees (CorpusConfig.subtree_min_words) are extra training pairs, and
// the vocabulary is learned from whole sentences alone
// (runtime/train/training_data.h), so that parsers
// trained with and without them share it (and can be ensembled).
TEST(PtbCorpusTest, SubtreesAddTrainingPairsButNotToTheVocabulary) {
  const std::string dir = ::testing::TempDir() + "/subtrees";
  ASSERT_EQ(system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  config::DataConfig data;
  config::CorpusConfig& corpus = *data.add_train();
  corpus.set_name("wsj");
  corpus.set_format(config::CorpusConfig::PTB_MRG);
  corpus.set_root(testing::SharedDataPath("ptb_sample"));
  corpus.set_first_document(1);
  corpus.set_last_document(10);
  data.mutable_tokenizer()->set_vocab_size(300);
  data.mutable_batching()->set_max_length(1000);
  config::DataConfig with_subtrees = data;
  with_subtrees.mutable_train(0)->set_subtree_min_words(3);

  absl::StatusOr<Tokenizer> plain = LoadOrTrainTokenizer(data, dir + "/plain", nullptr);
  absl::StatusOr<Tokenizer> augmented =
      LoadOrTrainTokenizer(with_subtrees, dir + "/subtrees", nullptr);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(augmented.ok()) << augmented.status();
  EXPECT_EQ(augmented->model(), plain->model());

  const auto rows = [&](const config::DataConfig& config) {
    std::unique_ptr<TokenBatcher> batcher = MakeTrainingBatcher(config, *plain);
    Batch batch;
    int64_t count = 0;
    while (*batcher->Next(&batch)) count += batch.size;
    return count;
  };
  const int64_t sentences = rows(data);
  EXPECT_GT(sentences, 50);
  // Every sentence of more than a few words has phrases of three or more.
  EXPECT_GT(rows(with_subtrees), 3 * sentences);
}

}  // namespace
}  // namespace tfm
