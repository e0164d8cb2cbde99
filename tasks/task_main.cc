// main() of the task binaries: the driver with the preset named at build time
// (TFM_DEFAULT_CONFIG, a runfile path) as the default --config.
#include <cstdlib>
#include <string>

#include "tasks/driver/driver.h"

namespace {

// Finds a runfile whether the binary runs under `bazel run` (the working
// directory is the runfiles tree) or directly from bazel-bin.
std::string Runfile(const char* argv0, const std::string& relative) {
  if (const char* dir = std::getenv("RUNFILES_DIR")) {
    return std::string(dir) + "/transformer/" + relative;
  }
  const std::string beside = std::string(argv0) + ".runfiles/transformer/" + relative;
  if (FILE* file = std::fopen(beside.c_str(), "r")) {
    std::fclose(file);
    return beside;
  }
  return relative;
}

}  // namespace

int main(int argc, char** argv) {
  return tfm::DriverMain(argc, argv, Runfile(argv[0], TFM_DEFAULT_CONFIG));
}
