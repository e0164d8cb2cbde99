#include "core/data/sentencepiece_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/paths.h"

namespace tfm {
namespace {

// The library's path inside a runfiles tree of this workspace.
constexpr char kRunfilesPath[] = "transformer/core/data/libtfm_sentencepiece.so";

std::vector<std::string> CandidatePaths() {
  std::vector<std::string> paths;
  if (const char* explicit_path = std::getenv("TFM_SENTENCEPIECE_LIB")) {
    paths.push_back(explicit_path);
  }
  for (const char* variable : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(variable)) {
      paths.push_back(absl::StrCat(dir, "/", kRunfilesPath));
    }
  }
  if (const std::string self = ExecutablePath(); !self.empty()) {
    paths.push_back(absl::StrCat(self, ".runfiles/", kRunfilesPath));
    paths.push_back(absl::StrCat(self.substr(0, self.rfind('/') + 1), spm::kLibraryName));
  }
  return paths;
}

absl::StatusOr<const spm::Api*> Open() {
  std::vector<std::string> tried;
  for (const std::string& path : CandidatePaths()) {
    if (access(path.c_str(), R_OK) != 0) {
      tried.push_back(path);
      continue;
    }
    // RTLD_DEEPBIND: the library and its dependencies resolve symbols among
    // themselves first, so libsentencepiece uses its own protobuf copy even
    // when the executable has libprotobuf loaded. RTLD_LOCAL keeps that copy
    // out of everyone else's lookups.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot load ", path, ": ", dlerror()));
    }
    using GetApi = const spm::Api* (*)();
    auto get_api = reinterpret_cast<GetApi>(dlsym(handle, spm::kApiSymbol));
    if (get_api == nullptr || get_api()->version != spm::kApiVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat(path, " is not a matching build of ", spm::kLibraryName));
    }
    return get_api();  // The handle stays open for the process's lifetime.
  }
  return absl::NotFoundError(absl::StrCat(
      spm::kLibraryName, " not found (build //core/data:", spm::kLibraryName,
      " or set TFM_SENTENCEPIECE_LIB); tried ", absl::StrJoin(tried, ", ")));
}

}  // namespace

absl::StatusOr<const spm::Api*> LoadSentencePiece() {
  static const absl::StatusOr<const spm::Api*>* const api =
      new absl::StatusOr<const spm::Api*>(Open());
  return *api;
}

}  // namespace tfm
