// Loads plugins: shared libraries whose static registrars add ops, kernels,
// layers or tasks when dlopen()ed.
//
// The executable must export the engine's symbols (link it with -rdynamic;
// tfm_binary and tfm_test do) so a plugin's registrars reach the same
// registries as the built-in parts instead of private copies.
#ifndef TFM_CORE_PLUGIN_LOADER_H_
#define TFM_CORE_PLUGIN_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tfm {

struct LoadedPlugin {
  std::string path;
  std::vector<std::string> registered;  // "op:scale", "kernel:scale/CPU/f32", ...
};

// Loads the library at `path`. Fails, leaving the registries as they were,
// if the file is missing, the library was built against other engine
// headers (its plugin ABI number, core/plugin_abi.h, differs from
// `engine_abi`, the host's TFM_PLUGIN_ABI_VERSION, or is missing; checked
// before any of its code runs), a symbol cannot be
// resolved, the library registers a name that already exists, or it
// registers nothing. The library stays
// loaded for the life of the process (its code backs the registered entries).
absl::StatusOr<LoadedPlugin> LoadPlugin(const std::string& path, uint64_t engine_abi);

// Loads each path in order; stops at the first failure.
absl::StatusOr<std::vector<LoadedPlugin>> LoadPlugins(const std::vector<std::string>& paths,
                                                       uint64_t engine_abi);

}  // namespace tfm

#endif  // TFM_CORE_PLUGIN_LOADER_H_
