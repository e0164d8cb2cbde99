// Memory stays bounded: writing a corpus keeps only its index, and opening
// and reading a few pairs of a large one does not read it all.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/data/binary_corpus.h"
#include "core/data/binary_corpus_writer.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// A field of /proc/self/status in kB (VmHWM: the peak resident size so far).
int64_t StatusKb(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

TEST(BinaryCorpusMemoryTest, WritingAndReadingStayBounded) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/large.bin");
  constexpr int kPairs = 200000;
  constexpr int kSideLength = 100;  // 200k pairs x 200 ids x 2 bytes: 80 MB of ids.
  const int64_t peak_before = StatusKb("VmHWM");
  ASSERT_GT(peak_before, 0);
  {
    auto writer = BinaryCorpusWriter::Create(path, 30000, 1, 2);
    ASSERT_TRUE(writer.ok()) << writer.status();
    Example example;
    example.source.assign(kSideLength, 7);
    example.target.assign(kSideLength, 9);
    for (int i = 0; i < kPairs; ++i) {
      example.source[0] = i % 30000;
      ASSERT_TRUE((*writer)->Add(example).ok());
    }
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  const int64_t write_growth_kb = StatusKb("VmHWM") - peak_before;
  std::printf("writing 80 MB of ids: peak resident memory grew by %lld kB (index: %d kB)\n",
              static_cast<long long>(write_growth_kb), kPairs * 16 / 1024);
  // The index (3 MB, twice while its vector grows) and the write buffer.
  EXPECT_LT(write_growth_kb, 16 * 1024);

  const int64_t resident_before = StatusKb("VmRSS");
  auto corpus = BinaryCorpus::Open(path, {30000, 1, 2});
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  Example example;
  for (int i = 0; i < kPairs; i += kPairs / 10) {
    ASSERT_TRUE((*corpus)->Read(i, &example).ok());
    ASSERT_EQ(example.source[0], i % 30000);
  }
  const int64_t read_growth_kb = StatusKb("VmRSS") - resident_before;
  std::printf("opening and reading 10 pairs: resident memory grew by %lld kB\n",
              static_cast<long long>(read_growth_kb));
  // The index is read to check it (3 MB); the 80 MB of ids are not.
  EXPECT_LT(read_growth_kb, 12 * 1024);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tfm
