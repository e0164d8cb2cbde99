// Counts of input records skipped, by reason, for readers that must never
// crash on bad data (invalid UTF-8, empty or over-long lines, malformed
// trees). Each reason keeps its first few locations so a user can look.
#ifndef TFM_CORE_DATA_SKIP_REPORT_H_
#define TFM_CORE_DATA_SKIP_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tfm {

class SkipReport {
 public:
  // Examples kept per reason.
  static constexpr int kMaxExamples = 3;

  // Records one skipped record: `reason` is a short stable key ("invalid
  // utf-8"), `where` a location ("train.de.gz:1234").
  void Skip(absl::string_view reason, absl::string_view where);
  void Merge(const SkipReport& other);

  int64_t count(absl::string_view reason) const;
  int64_t total() const;
  const std::map<std::string, int64_t>& counts() const { return counts_; }

  // "skipped 3 records: 2 invalid utf-8 (a.txt:4, a.txt:9), 1 empty line
  // (b.txt:1)", or "skipped 0 records".
  std::string Summary() const;

 private:
  std::map<std::string, int64_t> counts_;
  std::map<std::string, std::vector<std::string>> examples_;
};

}  // namespace tfm

#endif  // TFM_CORE_DATA_SKIP_REPORT_H_
