#include "runtime/train/checkpoint_directory.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
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

// The validated checkpoints among the oldest `candidates` of `entries`,
// best first (BestCheckpoints' order), by the metric of the newest
// validated one of all `entries`; those whose state cannot be read are
// passed over when `strict` is false, an error otherwise.
struct Ranked {
  double rank;
  size_t index;  // Into entries.
};
absl::StatusOr<std::vector<Ranked>> RankByValidation(const std::vector<CheckpointEntry>& entries,
                                                     size_t candidates, bool strict) {
  std::vector<train::TrainingState> states(entries.size());
  std::vector<bool> read(entries.size(), false);
  std::optional<bool> by_score;  // The newest validated checkpoint's metric.
  for (size_t i = entries.size(); i-- > 0;) {
    absl::StatusOr<train::TrainingState> state = ReadCheckpointState(entries[i].path);
    if (!state.ok()) {
      if (strict) return state.status();
      continue;
    }
    states[i] = *std::move(state);
    read[i] = true;
    if (!by_score.has_value() && states[i].has_valid_loss()) {
      by_score = states[i].ranked_by_score();
    }
  }
  std::vector<Ranked> ranked;
  if (!by_score.has_value()) return ranked;
  for (size_t i = 0; i < candidates && i < entries.size(); ++i) {
    if (!read[i]) continue;
    const std::optional<double> rank = ValidationRank(states[i], *by_score);
    if (rank.has_value()) ranked.push_back({*rank, i});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.index > b.index;
  });
  return ranked;
}

// average's checkpoints come from a work directory: one that is not there
// is NotFound, not "too few checkpoints".
absl::Status RequireWorkDirectory(const std::string& work_dir,
                                  const std::vector<CheckpointEntry>& entries) {
  if (!entries.empty()) return absl::OkStatus();
  struct stat info;
  if (stat(work_dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return absl::NotFoundError(absl::StrCat(work_dir, ": no such work directory"));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<double> ValidationRank(const train::TrainingState& state, bool by_score) {
  if (by_score) {
    if (!state.has_valid_score() || std::isnan(state.valid_score())) return std::nullopt;
    return state.valid_score();
  }
  if (!state.has_valid_loss() || std::isnan(state.valid_loss())) return std::nullopt;
  return -state.valid_loss();
}

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
  TFM_RETURN_IF_ERROR(RequireWorkDirectory(work_dir, entries));
  if (static_cast<int>(entries.size()) < count) {
    return absl::InvalidArgumentError(absl::StrCat("asked for the last ", count,
                                                   " checkpoints, but ", work_dir, " has only ",
                                                   entries.size()));
  }
  entries.erase(entries.begin(), entries.end() - count);
  return entries;
}

absl::StatusOr<std::vector<CheckpointEntry>> BestCheckpoints(const std::string& work_dir,
                                                             int count) {
  if (count < 1) return absl::InvalidArgumentError(absl::StrCat("--best=", count, " must be >= 1"));
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, ListCheckpoints(work_dir));
  TFM_RETURN_IF_ERROR(RequireWorkDirectory(work_dir, entries));
  TFM_ASSIGN_OR_RETURN(const std::vector<Ranked> ranked,
                       RankByValidation(entries, entries.size(), true));
  if (static_cast<int>(ranked.size()) < count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "asked for the best ", count, " checkpoints by validation, but ", ranked.size(), " of the ",
        entries.size(), " in ", work_dir,
        " recorded a validation at their update (train.keep_best_checkpoints keeps them, and "
        "makes every validation write one)"));
  }
  std::vector<CheckpointEntry> best;
  for (int i = 0; i < count; ++i) best.push_back(entries[ranked[i].index]);
  std::sort(best.begin(), best.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.update < b.update; });
  return best;
}

absl::Status PruneCheckpoints(const std::string& work_dir, int keep_last, int keep_best) {
  if (keep_last < 1) {
    return absl::InvalidArgumentError(absl::StrCat("keep_last=", keep_last, " must be >= 1"));
  }
  if (keep_best < 0) {
    return absl::InvalidArgumentError(absl::StrCat("keep_best=", keep_best, " must be >= 0"));
  }
  TFM_ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, ListCheckpoints(work_dir));
  std::vector<bool> keep(entries.size(), false);
  for (size_t i = entries.size() > static_cast<size_t>(keep_last) ? entries.size() - keep_last : 0;
       i < entries.size(); ++i) {
    keep[i] = true;
  }
  if (keep_best > 0 && entries.size() > static_cast<size_t>(keep_last)) {
    // Ranked among the older ones only (the last keep_last stay anyway):
    // any of the best keep_best overall that is older is among them.
    TFM_ASSIGN_OR_RETURN(const std::vector<Ranked> ranked,
                         RankByValidation(entries, entries.size() - keep_last, false));
    for (size_t i = 0; i < ranked.size() && i < static_cast<size_t>(keep_best); ++i) {
      keep[ranked[i].index] = true;
    }
  }
  std::error_code error;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (keep[i]) continue;
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
