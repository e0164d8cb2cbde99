#include "tasks/parsing/ptb_reader.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/util/peer_python.h"

namespace tfm {
namespace {

using ::tfm::testing::SharedDataPath;
using ::tfm::testing::WriteTempFile;

std::vector<std::string> SampleFiles() {
  std::vector<std::string> files;
  for (int i = 1; i <= 199; ++i) {
    const std::string path = SharedDataPath(absl::StrFormat("ptb_sample/wsj_%04d.mrg", i));
    if (std::filesystem::exists(path)) files.push_back(path);
  }
  return files;
}

bool AnyLabel(const Tree& tree, bool (*bad)(const std::string&)) {
  if (bad(tree.label)) return true;
  for (const Tree& child : tree.children) {
    if (AnyLabel(child, bad)) return true;
  }
  return false;
}

TEST(PtbReaderTest, ReadsWholeSampleCleanly) {
  const std::vector<std::string> files = SampleFiles();
  ASSERT_EQ(files.size(), 189u);
  // An independent count from Python: top-level groups, and leaves that are
  // not traces.
  absl::StatusOr<std::string> expected = testing::RunPeerPython(R"(
import re, sys
trees = words = 0
for path in sys.argv[1:]:
    text = open(path).read()
    depth = 0
    for c in text:
        if c == '(':
            trees += depth == 0
            depth += 1
        elif c == ')':
            depth -= 1
    words += sum(1 for tag in re.findall(r'\(([^\s()]+) [^\s()]+\)', text) if tag != '-NONE-')
print(trees, words)
)", files);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::vector<std::string> counts = absl::StrSplit(*expected, absl::ByAnyChar(" \n"),
                                                         absl::SkipEmpty());
  ASSERT_EQ(counts.size(), 2u);

  absl::StatusOr<std::unique_ptr<PtbReader>> reader = PtbReader::Open(files);
  ASSERT_TRUE(reader.ok()) << reader.status();
  int trees = 0;
  int64_t words = 0;
  Tree tree;
  while ((*reader)->Next(&tree)) {
    ++trees;
    words += TreeWords(tree).size();
    ASSERT_FALSE(AnyLabel(tree, [](const std::string& l) { return l == "-NONE-"; }))
        << FormatTree(tree);
    // No function tags are left: a '-' or '=' only inside tags like -LRB-.
    ASSERT_FALSE(AnyLabel(tree, [](const std::string& l) {
      return !l.empty() && l[0] != '-' && l.find_first_of("-=") != std::string::npos;
    })) << FormatTree(tree);
    ASSERT_FALSE(tree.label.empty());
  }
  EXPECT_TRUE((*reader)->status().ok());
  EXPECT_EQ((*reader)->skips().total(), 0) << (*reader)->skips().Summary();
  EXPECT_EQ(trees, std::stoi(counts[0]));
  EXPECT_EQ(trees, 3796);
  EXPECT_EQ(words, std::stoll(counts[1]));
}

TEST(PtbReaderTest, SkipsMalformedTreesWithReasons) {
  const std::string path = WriteTempFile("bad.mrg", R"mrg(
( (S (NP (NN one)) (VP (VBZ ok)) ) )
( (S (NP (NN missing)) (VP (VBZ close) )
( (S (NP (NN two)) (VP (VBZ ok)) ) )
) stray
garbage ( (S (NN three)) )
( (S (NP (DT a) word) ) )
( (S (NP-SBJ (-NONE- *T*-1)) ) )
( (S (NN four))
  )
( (S (NN truncated)
)
)mrg");
  absl::StatusOr<std::unique_ptr<PtbReader>> reader = PtbReader::Open({path});
  ASSERT_TRUE(reader.ok());
  std::vector<std::string> got;
  Tree tree;
  while ((*reader)->Next(&tree)) got.push_back(FormatTree(tree));
  EXPECT_EQ(got, (std::vector<std::string>{"(S (NP (NN one)) (VP (VBZ ok)))",
                                           "(S (NP (NN two)) (VP (VBZ ok)))", "(S (NN three))",
                                           "(S (NN four))"}));
  const SkipReport& skips = (*reader)->skips();
  // The tree missing ')' (ended by the next tree at column 0), the stray
  // ')', and the tree cut off by the end of the file.
  EXPECT_EQ(skips.count("unbalanced brackets"), 3) << skips.Summary();
  EXPECT_EQ(skips.count("text outside brackets"), 2) << skips.Summary();
  EXPECT_EQ(skips.count("malformed tree"), 1) << skips.Summary();
  EXPECT_EQ(skips.count("empty tree"), 1) << skips.Summary();
  EXPECT_TRUE(absl::StrContains(skips.Summary(), path + ":3")) << skips.Summary();
}

TEST(PtbReaderTest, MissingFileNamesPath) {
  absl::StatusOr<std::unique_ptr<PtbReader>> reader =
      PtbReader::Open({SharedDataPath("ptb_sample/wsj_0001.mrg"), "/no/such/wsj_9999.mrg"});
  ASSERT_FALSE(reader.ok());
  EXPECT_TRUE(absl::StrContains(reader.status().message(), "/no/such/wsj_9999.mrg"));
}

TEST(PtbReaderTest, ListsFullWsjLayout) {
  const std::string root = std::string(std::getenv("TEST_TMPDIR")) + "/wsj";
  for (const char* file : {"02/wsj_0201.mrg", "02/wsj_0200.mrg", "03/wsj_0300.mrg", "03/notes"}) {
    std::filesystem::create_directories(std::filesystem::path(root + "/" + file).parent_path());
    WriteTempFile(std::string("wsj/") + file, "( (S (NN x)) )\n");
  }
  absl::StatusOr<std::vector<std::string>> files = WsjSectionFiles(root, 2, 3);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{root + "/02/wsj_0200.mrg", root + "/02/wsj_0201.mrg",
                                              root + "/03/wsj_0300.mrg"}));
  absl::StatusOr<std::unique_ptr<PtbReader>> reader = PtbReader::Open(*files);
  ASSERT_TRUE(reader.ok());
  int trees = 0;
  Tree tree;
  while ((*reader)->Next(&tree)) ++trees;
  EXPECT_EQ(trees, 3);
  absl::StatusOr<std::vector<std::string>> missing = WsjSectionFiles(root, 2, 4);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::StrContains(missing.status().message(), root + "/04"));
}

}  // namespace
}  // namespace tfm
