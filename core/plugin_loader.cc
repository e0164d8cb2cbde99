#include "core/plugin_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "core/elf_symbols.h"
#include "core/plugin_abi.h"
#include "core/registration_journal.h"

namespace tfm {
namespace {

absl::Mutex& LoaderMutex() {
  static auto* mu = new absl::Mutex();
  return *mu;
}

// Canonical paths of the plugins loaded so far: dlopen of a loaded library
// returns the same handle without running its registrars again.
std::set<std::string>& LoadedPaths() {
  static auto* paths = new std::set<std::string>();
  return *paths;
}

std::string AbiName(uint64_t version) { return absl::StrFormat("0x%016x", version); }

// OK if the library at `path` was compiled against this engine's headers.
// Read from the file, before dlopen: a plugin of another ABI must not run
// its registrars (they would hand structs of another layout to ours).
absl::Status CheckPluginAbi(const std::string& path, uint64_t engine_abi) {
  absl::StatusOr<uint64_t> version = ReadExportedUint64(path, TFM_PLUGIN_ABI_SYMBOL_NAME);
  if (absl::IsNotFound(version.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin '", path, "' has no plugin ABI number (it does not export ",
        TFM_PLUGIN_ABI_SYMBOL_NAME, "): build it with tfm_plugin (tools/build_defs.bzl), which ",
        "stamps it with the ABI of the headers it is compiled against"));
  }
  if (!version.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load plugin: ", version.status().message()));
  }
  if (*version != engine_abi) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plugin '", path, "' was built for plugin ABI ", AbiName(*version),
        " but this engine's ABI is ", AbiName(engine_abi),
        ": its engine headers differ from this engine's; rebuild it against them"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedPlugin> LoadPlugin(const std::string& path, uint64_t engine_abi) {
  absl::MutexLock lock(&LoaderMutex());
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("plugin '", path, "' does not exist"));
  }
  char canonical[PATH_MAX];
  const std::string key = realpath(path.c_str(), canonical) != nullptr ? canonical : path;
  if (LoadedPaths().count(key) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("plugin '", path, "' is already loaded"));
  }
  if (absl::Status abi = CheckPluginAbi(path, engine_abi); !abi.ok()) return abi;
  RegistrationJournal& journal = RegistrationJournal::Get();
  const size_t first_entry = journal.num_entries();
  const size_t first_error = journal.num_errors();

  // RTLD_NOW resolves every symbol up front, so a missing one fails here with
  // its name rather than later in the middle of training.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load plugin '", path, "': ", dlerror()));
  }
  std::vector<absl::Status> errors = journal.ErrorsSince(first_error);
  std::vector<RegistrationEntry> entries = journal.EntriesSince(first_entry);
  if (!errors.empty() || entries.empty()) {
    std::vector<std::string> messages;
    for (const absl::Status& error : errors) messages.emplace_back(error.message());
    journal.RollBack(first_entry, first_error);
    // The handle is kept open on purpose: the library's static objects may
    // already be referenced (e.g. by the journal's undo functions).
    if (entries.empty() && errors.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "plugin '", path, "' registered nothing (already loaded, or built without "
          "registrars? plugin targets need alwayslink)"));
    }
    return absl::AlreadyExistsError(absl::StrCat("plugin '", path, "' rejected: ",
                                                 absl::StrJoin(messages, "; ")));
  }
  LoadedPaths().insert(key);
  LoadedPlugin loaded{path, {}};
  for (const RegistrationEntry& entry : entries) {
    loaded.registered.push_back(absl::StrCat(entry.kind, ":", entry.name));
  }
  return loaded;
}

absl::StatusOr<std::vector<LoadedPlugin>> LoadPlugins(const std::vector<std::string>& paths,
                                                       uint64_t engine_abi) {
  std::vector<LoadedPlugin> loaded;
  for (const std::string& path : paths) {
    absl::StatusOr<LoadedPlugin> plugin = LoadPlugin(path, engine_abi);
    if (!plugin.ok()) return plugin.status();
    loaded.push_back(*std::move(plugin));
  }
  return loaded;
}

}  // namespace tfm
