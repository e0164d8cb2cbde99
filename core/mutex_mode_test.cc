// core/mutex_mode.cc, compiled here with NDEBUG as in an optimised build:
// taking two mutexes in both orders (a lock-order inversion, which Debian's
// Abseil, built in debug mode, aborts on) passes, unless
// TFM_MUTEX_DEADLOCK_DETECTION=1 keeps the detector.
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

void LockBothOrders() {
  absl::Mutex a, b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
}

TEST(MutexModeTest, OptimisedBuildsDoNotRunTheDeadlockDetector) {
  const char* keep = std::getenv("TFM_MUTEX_DEADLOCK_DETECTION");
  if (keep != nullptr) GTEST_SKIP() << "TFM_MUTEX_DEADLOCK_DETECTION is set for this run";
  LockBothOrders();  // Would abort with the detector on.
}

TEST(MutexModeDeathTest, TheVariableKeepsTheDetector) {
  // The "threadsafe" style re-runs this binary for the child, whose static
  // initialisers then see the variable.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("TFM_MUTEX_DEADLOCK_DETECTION", "1", /*overwrite=*/1);
  EXPECT_DEATH(LockBothOrders(), "[Pp]otential [Mm]utex deadlock|[Cc]ycle");
  unsetenv("TFM_MUTEX_DEADLOCK_DETECTION");
}

}  // namespace
}  // namespace tfm
