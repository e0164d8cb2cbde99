// The host blocks under the CPU allocator: cache-line alignment, huge pages
// from kHugePageBytes up, and the environment line that says so.
#include "core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/environment_report.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

uintptr_t Address(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr); }

// The value of `field` ("THPeligible") in /proc/self/smaps for the mapping
// that holds `ptr`; empty if the kernel does not say.
std::string SmapsField(const void* ptr, const std::string& field) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    // A mapping's first line: "start-end perms ...", in hex.
    const std::vector<std::string> words = absl::StrSplit(line, ' ');
    const std::vector<std::string> range = absl::StrSplit(words[0], '-');
    uint64_t start = 0, end = 0;
    if (range.size() == 2 && absl::SimpleHexAtoi(range[0], &start) &&
        absl::SimpleHexAtoi(range[1], &end)) {
      inside = Address(ptr) >= start && Address(ptr) < end;
      continue;
    }
    if (inside && absl::StartsWith(line, field + ":")) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(' '));
      return value;
    }
  }
  return "";
}

TEST(HostBlockAllocTest, SmallBlocksStartOnACacheLine) {
  for (const size_t bytes : {size_t{1}, size_t{100}, size_t{65536}, kHugePageBytes - 1}) {
    void* ptr = HostBlockAlloc(bytes);
    ASSERT_NE(ptr, nullptr) << bytes;
    EXPECT_EQ(Address(ptr) % kCpuAlignment, 0u) << bytes;
    std::memset(ptr, 1, bytes);
    std::free(ptr);
  }
}

// Off until a trainer asks (decoding leaves them off), then on.
TEST(HostBlockAllocTest, TrainingTurnsHugePagesOn) {
  if (std::getenv("TFM_HUGE_PAGES") != nullptr) GTEST_SKIP() << "TFM_HUGE_PAGES is set";
  SetHostHugePagesForTraining(false);  // As a process that only decodes starts.
  EXPECT_FALSE(HostHugePagesOn());
  void* small_pages = HostBlockAlloc(3 * kHugePageBytes);
  ASSERT_NE(small_pages, nullptr);
  EXPECT_EQ(Address(small_pages) % kCpuAlignment, 0u);
  std::free(small_pages);
  SetHostHugePagesForTraining(true);
  EXPECT_TRUE(HostHugePagesOn());
}

// From 2 MiB up a block starts on a huge page, and the kernel is asked for
// huge pages over it: where it grants them (mode madvise or always) the
// mapping is eligible. Whether it finds free 2 MiB pages is its business.
TEST(HostBlockAllocTest, LargeBlocksStartOnAHugePageAndAskForHugePages) {
  SetHostHugePagesForTraining(true);
  ASSERT_TRUE(HostHugePagesOn()) << "TFM_HUGE_PAGES=0 in the test's environment";
  const size_t bytes = 2 * kHugePageBytes + 12345;
  void* ptr = HostBlockAlloc(bytes);
  ASSERT_NE(ptr, nullptr);
  EXPECT_EQ(Address(ptr) % kHugePageBytes, 0u);
  std::memset(ptr, 1, bytes);
  const std::string mode = TransparentHugePagesMode();
  const std::string eligible = SmapsField(ptr, "THPeligible");
  std::free(ptr);
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unknown")
      << mode;
  if (eligible.empty() || mode == "never" || mode == "unknown") {
    GTEST_SKIP() << "this kernel grants no transparent huge pages (mode " << mode
                 << ", THPeligible '" << eligible << "')";
  }
  EXPECT_EQ(eligible, "1") << "mode " << mode;
}

TEST(HostBlockAllocTest, TheEnvironmentReportDescribesTheAllocator) {
  SetHostHugePagesForTraining(true);
  std::string allocator;
  for (const auto& [label, text] : EnvironmentReport()) {
    if (label == "allocator") allocator = text;
  }
  EXPECT_TRUE(absl::StrContains(allocator, "blocks >= 2 MiB on huge pages")) << allocator;
  EXPECT_TRUE(absl::StrContains(allocator, TransparentHugePagesMode())) << allocator;
}

}  // namespace
}  // namespace tfm
