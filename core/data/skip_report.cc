#include "core/data/skip_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tfm {

void SkipReport::Skip(absl::string_view reason, absl::string_view where) {
  const std::string key(reason);
  ++counts_[key];
  std::vector<std::string>& examples = examples_[key];
  if (static_cast<int>(examples.size()) < kMaxExamples) examples.emplace_back(where);
}

void SkipReport::Merge(const SkipReport& other) {
  for (const auto& [reason, count] : other.counts_) {
    counts_[reason] += count;
    std::vector<std::string>& examples = examples_[reason];
    for (const std::string& where : other.examples_.at(reason)) {
      if (static_cast<int>(examples.size()) < kMaxExamples) examples.push_back(where);
    }
  }
}

int64_t SkipReport::count(absl::string_view reason) const {
  auto it = counts_.find(std::string(reason));
  return it == counts_.end() ? 0 : it->second;
}

int64_t SkipReport::total() const {
  int64_t total = 0;
  for (const auto& [reason, count] : counts_) total += count;
  return total;
}

std::string SkipReport::Summary() const {
  std::vector<std::string> parts;
  for (const auto& [reason, count] : counts_) {
    parts.push_back(absl::StrCat(count, " ", reason, " (",
                                 absl::StrJoin(examples_.at(reason), ", "),
                                 count > kMaxExamples ? ", ..." : "", ")"));
  }
  const int64_t n = total();
  return absl::StrCat("skipped ", n, n == 1 ? " record" : " records",
                      parts.empty() ? "" : ": ", absl::StrJoin(parts, ", "));
}

}  // namespace tfm
