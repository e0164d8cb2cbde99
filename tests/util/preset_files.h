// The presets (*.pbtxt) of a configs folder, found on disk, so that a test
// checks a new preset without listing it: tasks/presets_test for every
// task's, each plugin's test for its own.
#ifndef TFM_TESTS_UTIL_PRESET_FILES_H_
#define TFM_TESTS_UTIL_PRESET_FILES_H_

#include <string>
#include <vector>

namespace tfm {
namespace testing {

// Runfile-relative paths ("<folder>/<name>.pbtxt") of the presets in the
// runfile folder `folder`, sorted; empty when the folder is missing.
std::vector<std::string> PresetFiles(const std::string& folder);

}  // namespace testing
}  // namespace tfm

#endif  // TFM_TESTS_UTIL_PRESET_FILES_H_
