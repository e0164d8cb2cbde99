#include "tests/util/preset_files.h"

#include <algorithm>
#include <filesystem>

#include "tests/util/peer_python.h"

namespace tfm {
namespace testing {

std::vector<std::string> PresetFiles(const std::string& folder) {
  std::vector<std::string> presets;
  const std::filesystem::path path = RunfilePath(folder);
  if (!std::filesystem::is_directory(path)) return presets;
  for (const auto& file : std::filesystem::directory_iterator(path)) {
    if (file.path().extension() != ".pbtxt") continue;
    presets.push_back(folder + "/" + file.path().filename().string());
  }
  std::sort(presets.begin(), presets.end());
  return presets;
}

}  // namespace testing
}  // namespace tfm
