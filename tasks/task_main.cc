// main() of the task binaries: the driver with the preset named at build time
// (TFM_DEFAULT_CONFIG, a runfile path) as the default --config.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tasks/driver/driver.h"

namespace {

// Finds a runfile whether the binary runs under `bazel run` (the working
// directory is the runfiles tree), directly from bazel-bin, or through a
// symbolic link or PATH (`ln -s .../bazel-bin/tasks/translate_ende
// ~/bin/`): then argv[0] has no runfiles beside it, the executable itself
// (/proc/self/exe, links resolved) has.
std::string Runfile(const char* argv0, const std::string& relative) {
  if (const char* dir = std::getenv("RUNFILES_DIR")) {
    return std::string(dir) + "/transformer/" + relative;
  }
  std::vector<std::string> programs = {argv0};
  char exe[PATH_MAX];
  if (const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1); n > 0) {
    programs.emplace_back(exe, n);
  }
  for (const std::string& program : programs) {
    const std::string beside = program + ".runfiles/transformer/" + relative;
    if (FILE* file = std::fopen(beside.c_str(), "r")) {
      std::fclose(file);
      return beside;
    }
  }
  return relative;
}

}  // namespace

int main(int argc, char** argv) {
  return tfm::DriverMain(argc, argv, Runfile(argv[0], TFM_DEFAULT_CONFIG));
}
