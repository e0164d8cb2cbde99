// The writer's destination policy (core/data/file_io.h): a corpus written
// through a symbolic link replaces the file it names, keeps that file's
// mode, and leaves no temporary file.
#include "core/data/binary_corpus_writer.h"

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/data/binary_corpus.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kVocabularyChecksum = 0x1234;
constexpr uint64_t kDataChecksum = 0x5678;

// More pairs than the writer buffers (1 MiB), so the header is rewritten
// after the body has reached the file.
std::vector<Example> ManyExamples() {
  std::vector<Example> examples(40000);
  for (size_t i = 0; i < examples.size(); ++i) {
    examples[i].source.assign(5 + i % 11, 2 + i % 97);
    examples[i].target.assign(3 + i % 7, 2 + i % 89);
  }
  return examples;
}

absl::Status Write(const std::string& path, const std::vector<Example>& examples) {
  auto writer = BinaryCorpusWriter::Create(path, 100, kVocabularyChecksum, kDataChecksum);
  if (!writer.ok()) return writer.status();
  for (const Example& example : examples) {
    absl::Status added = (*writer)->Add(example);
    if (!added.ok()) return added;
  }
  return (*writer)->Finish();
}

TEST(BinaryCorpusWriterTest, ThroughALinkReplacesItsTargetKeepingTheMode) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/corpus_writer_link");
  fs::remove_all(dir);
  fs::create_directories(dir + "/data");
  const std::string target = dir + "/data/train.bin";
  ASSERT_TRUE(Write(target, {{{5, 1}, {6, 1}}}).ok());
  ASSERT_EQ(chmod(target.c_str(), 0440), 0);
  const std::string link = dir + "/train.bin";
  fs::create_symlink("data/train.bin", link);

  const std::vector<Example> examples = ManyExamples();
  const absl::Status status = Write(link, examples);
  ASSERT_TRUE(status.ok()) << status;

  EXPECT_TRUE(fs::is_symlink(link));
  struct stat info {};
  ASSERT_EQ(stat(target.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0440u);
  auto corpus = BinaryCorpus::Open(link, {100, kVocabularyChecksum, kDataChecksum});
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  ASSERT_EQ((*corpus)->size(), static_cast<int64_t>(examples.size()));
  Example last;
  ASSERT_TRUE((*corpus)->Read(examples.size() - 1, &last).ok());
  EXPECT_EQ(last.source, examples.back().source);
  EXPECT_EQ(last.target, examples.back().target);
  for (const char* sub : {"", "/data"}) {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir + sub)) {
      EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
    }
  }
}

}  // namespace
}  // namespace tfm
