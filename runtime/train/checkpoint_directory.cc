#include "runtime/train/checkpoint_directory.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "runtime/train/checkpoint.h"

namespace tfm {
namespace {

namespace fs = std::filesystem;

constexpr char kPrefix[] = "checkpoint_";

absl::Status FilesystemError(absl::string_view what, const std::string& path,
                             const std::error_code& error) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", error.message()));
}

}  // namespace

absl::StatusOr<std::vector<CheckpointEntry>> ListCheckpoints(const std::string& work_dir) {
  std::vector<CheckpointEntry> entries;
  std::error_code error;
  fs::directory_iterator it(work_dir, error);
  if (error == std::errc::no_such_file_or_directory) return entries;
  if (error) return FilesystemError("cannot list", work_dir, error);
  for (const fs::directory_entry& entry : it) {
    const std::string filename = entry.path().filename().string();
    absl::string_view name = filename;
    int64_t update = 0;
    if (!absl::ConsumePrefix(&name, kPrefix) || !absl::SimpleAtoi(name, &update) ||
        !fs::exists(entry.path() / kManifestFile)) {
      continue;
    }
    entries.push_back({update, entry.path().string()});
  }
  std::sort(entries.begin(), entries.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.update < b.update; });
  return entries;
}

absl::StatusOr<CheckpointEntry> LatestCheckpoint(const std::string& work_dir) {
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, ListCheckpoints(work_dir));
  if (entries.empty()) return absl::NotFoundError(absl::StrCat("no checkpoint in ", work_dir));
  return entries.back();
}

absl::StatusOr<std::vector<CheckpointEntry>> LastCheckpoints(const std::string& work_dir,
                                                             int count) {
  if (count < 1) return absl::InvalidArgumentError(absl::StrCat("--last=", count, " must be >= 1"));
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, ListCheckpoints(work_dir));
  if (entries.empty()) {
    struct stat info;
    if (stat(work_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      return absl::NotFoundError(absl::StrCat(work_dir, ": no such work directory"));
    }
  }
  if (static_cast<int>(entries.size()) < count) {
    return absl::InvalidArgumentError(absl::StrCat("asked for the last ", count,
                                                   " checkpoints, but ", work_dir, " has only ",
                                                   entries.size()));
  }
  entries.erase(entries.begin(), entries.end() - count);
  return entries;
}

absl::Status PruneCheckpoints(const std::string& work_dir, int keep_last) {
  if (keep_last < 1) {
    return absl::InvalidArgumentError(absl::StrCat("keep_last=", keep_last, " must be >= 1"));
  }
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, ListCheckpoints(work_dir));
  std::error_code error;
  for (size_t i = 0; i + keep_last < entries.size(); ++i) {
    fs::remove_all(entries[i].path, error);
    if (error) return FilesystemError("cannot remove", entries[i].path, error);
  }
  // Temporary directories of saves cut short by a crash: their process is
  // gone. A live process's may be a save in progress.
  for (const fs::directory_entry& entry : fs::directory_iterator(work_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, absl::StrCat(".", kPrefix))) continue;
    const size_t tag = name.find(".tmp.");
    int pid = 0;
    if (tag == std::string::npos ||
        !absl::SimpleAtoi(absl::StripSuffix(name.substr(tag + 5), ".replaced"), &pid) ||
        !(kill(pid, 0) != 0 && errno == ESRCH)) {
      continue;
    }
    fs::remove_all(entry.path(), error);
    if (error) return FilesystemError("cannot remove", entry.path().string(), error);
  }
  if (error) return FilesystemError("cannot list", work_dir, error);
  return absl::OkStatus();
}

}  // namespace tfm
