// The crash report: a segmentation fault prints the signal and a stack trace
// that names the crashing function, and the process still dies of SIGSEGV.
#include <signal.h>
#include <stdlib.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

// Kept out of line so the trace has its own frame to name.
__attribute__((noinline)) void DereferenceNullOnPurpose() {
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
}

TEST(CrashReportDeathTest, SegmentationFaultPrintsATraceNamingTheFunction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(DereferenceNullOnPurpose(), testing::KilledBySignal(SIGSEGV),
              "SIGSEGV(.|\n)*DereferenceNullOnPurpose");
}

TEST(CrashReportDeathTest, TheVariableTurnsItOff) {
  // The threadsafe style re-executes this binary, so its start-up sees the
  // variable.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(setenv("TFM_CRASH_TRACE", "0", 1), 0);
  EXPECT_EXIT(DereferenceNullOnPurpose(), testing::KilledBySignal(SIGSEGV),
              testing::Not(testing::HasSubstr("SIGSEGV")));
  unsetenv("TFM_CRASH_TRACE");
}

TEST(CrashReportTest, SigtermKeepsItsDisposition) {
  struct sigaction now = {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

}  // namespace
}  // namespace tfm
