// Runs a shell command for an end-to-end test (a task binary, mpirun), with a
// time limit so that a hang fails the test instead of stalling it.
#ifndef TFM_TESTS_UTIL_RUN_COMMAND_H_
#define TFM_TESTS_UTIL_RUN_COMMAND_H_

#include <string>

#include "absl/time/time.h"

namespace tfm {
namespace testing {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when a signal ended it.
  std::string output;  // stdout and stderr together.
  absl::Duration took;
};

// `command` through the shell, killed after `timeout_seconds`.
CommandResult RunCommand(const std::string& command, int timeout_seconds = 240);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_RUN_COMMAND_H_
