// main() of the task binaries: the driver with the preset named at build time
// (TFM_DEFAULT_CONFIG, a runfile path) as the default --config.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/paths.h"
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
  for (const std::string& program : {std::string(argv0), tfm::ExecutablePath()}) {
    if (program.empty()) continue;
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
