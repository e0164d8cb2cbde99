#include "runtime/train/work_dir_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tfm {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  EXPECT_EQ(std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str()), 0);
  return dir;
}

// A second holder, in this process or another, is refused naming the
// directory and the holder's pid; released, the lock is free again.
TEST(WorkDirLockTest, OneHolderAtATime) {
  const std::string dir = FreshDir("locked");
  {
    absl::StatusOr<WorkDirLock> first = WorkDirLock::Acquire(dir);
    ASSERT_TRUE(first.ok()) << first.status();
    const absl::Status second = WorkDirLock::Acquire(dir).status();
    EXPECT_EQ(second.code(), absl::StatusCode::kFailedPrecondition) << second;
    EXPECT_NE(second.message().find(absl::StrCat("the work directory ", dir,
                                                 " is in use by another training run (pid ",
                                                 getpid(), ")")),
              std::string::npos)
        << second;
    // Another process sees it held too.
    const pid_t child = fork();
    if (child == 0) _exit(WorkDirLock::Acquire(dir).ok() ? 1 : 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child took the lock";
  }
  EXPECT_TRUE(WorkDirLock::Acquire(dir).ok());
}

// A holder that dies without cleaning up leaves the lock free.
TEST(WorkDirLockTest, ADeadHoldersLockIsFree) {
  const std::string dir = FreshDir("dead_holder");
  const pid_t child = fork();
  if (child == 0) {
    absl::StatusOr<WorkDirLock> lock = WorkDirLock::Acquire(dir);
    _exit(lock.ok() ? 0 : 1);  // No destructor runs.
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(WorkDirLock::Acquire(dir).ok());
}

}  // namespace
}  // namespace tfm
