// Resolving relative paths under `bazel run`, whose working directory is the
// binary's runfiles tree rather than where the user typed the command.
#ifndef TFM_CORE_PATHS_H_
#define TFM_CORE_PATHS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tfm {

// `name` inside directory `dir`: "dir/name".
std::string JoinPath(absl::string_view dir, absl::string_view name);

// A path given on the command line: relative paths are taken from the
// user's working directory (BUILD_WORKING_DIRECTORY under `bazel run`).
std::string ResolveUserPath(const std::string& path);

// A data path from a config: relative paths are taken from the project root
// (BUILD_WORKSPACE_DIRECTORY under `bazel run`), else the working directory.
std::string ResolveDataPath(const std::string& path);

// This process's executable, symbolic links resolved (/proc/self/exe), or
// "" where it cannot be read. Its runfiles lie beside it, whatever path or
// link the program was started through.
std::string ExecutablePath();

}  // namespace tfm

#endif  // TFM_CORE_PATHS_H_
