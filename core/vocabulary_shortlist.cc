#include "core/vocabulary_shortlist.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

absl::Status CheckIds(const std::vector<int32_t>& ids, int64_t vocabulary_size,
                      const std::string& what) {
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocabulary_size) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": target id ", id,
                                                     " is outside the vocabulary of ",
                                                     vocabulary_size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<VocabularyShortlist> VocabularyShortlist::Create(
    int64_t vocabulary_size, std::vector<int32_t> frequent, std::vector<std::vector<int32_t>> best,
    int frequent_count, int best_count) {
  if (vocabulary_size < 1 || frequent_count < 0 || best_count < 0 ||
      static_cast<int64_t>(best.size()) > vocabulary_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a shortlist of ", frequent_count, " frequent and ", best_count,
        " best targets per source token (each >= 0) for ", best.size(),
        " source tokens of a vocabulary of ", vocabulary_size));
  }
  VocabularyShortlist shortlist;
  shortlist.vocabulary_size_ = vocabulary_size;
  shortlist.best_count_ = best_count;
  if (static_cast<int>(frequent.size()) > frequent_count) frequent.resize(frequent_count);
  if (absl::Status ok = CheckIds(frequent, vocabulary_size, "frequent targets"); !ok.ok()) {
    return ok;
  }
  for (size_t s = 0; s < best.size(); ++s) {
    if (static_cast<int>(best[s].size()) > best_count) best[s].resize(best_count);
    if (absl::Status ok = CheckIds(best[s], vocabulary_size,
                                   absl::StrCat("the targets of source token ", s));
        !ok.ok()) {
      return ok;
    }
  }
  shortlist.frequent_ = std::move(frequent);
  shortlist.best_ = std::move(best);
  return shortlist;
}

std::vector<int32_t> VocabularyShortlist::Candidates(absl::Span<const int> source_ids,
                                                     absl::Span<const int> always) const {
  // A mark per token, then one pass in id order: ascending, no duplicates.
  std::vector<char> marked(vocabulary_size_, 0);
  const auto mark = [&](int id) {
    if (id >= 0 && id < vocabulary_size_) marked[id] = 1;
  };
  for (const int32_t id : frequent_) marked[id] = 1;
  for (const int id : always) mark(id);
  for (const int source : source_ids) {
    if (source < 0 || source >= static_cast<int64_t>(best_.size())) continue;
    for (const int32_t id : best_[source]) marked[id] = 1;
  }
  std::vector<int32_t> candidates;
  for (int64_t id = 0; id < vocabulary_size_; ++id) {
    if (marked[id]) candidates.push_back(static_cast<int32_t>(id));
  }
  return candidates;
}

}  // namespace tfm
