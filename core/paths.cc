#include "core/paths.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

std::string ResolveAgainst(const char* variable, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const char* root = std::getenv(variable);
  return root != nullptr ? std::string(root) + "/" + path : path;
}

}  // namespace

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  return absl::StrCat(dir, "/", name);
}

std::string ResolveUserPath(const std::string& path) {
  return ResolveAgainst("BUILD_WORKING_DIRECTORY", path);
}

std::string ResolveDataPath(const std::string& path) {
  return ResolveAgainst("BUILD_WORKSPACE_DIRECTORY", path);
}

std::string ExecutablePath() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  return n > 0 ? std::string(exe, n) : std::string();
}

}  // namespace tfm
