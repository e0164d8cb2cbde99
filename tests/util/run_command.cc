#include "tests/util/run_command.h"

#include <sys/wait.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tfm {
namespace testing {

CommandResult RunCommand(const std::string& command, int timeout_seconds) {
  CommandResult result;
  const absl::Time start = absl::Now();
  FILE* pipe = popen(
      absl::StrCat("timeout -s KILL ", timeout_seconds, " ", command, " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.took = absl::Now() - start;
  return result;
}

}  // namespace testing
}  // namespace tfm
