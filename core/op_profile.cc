#include "core/op_profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace tfm {
namespace {

struct OpTotal {
  int64_t calls = 0;
  double seconds = 0;
};

// -1: not read yet; else bit 0: profiling on, bit 1: GPU ops waited for
// while it is on, bit 2: rows by shape (bits 1 and 2 kept while profiling
// is turned off and on again).
std::atomic<int>& EnabledFlag() {
  static std::atomic<int> flag{-1};
  return flag;
}

int ReadFlag() {
  int flag = EnabledFlag().load(std::memory_order_relaxed);
  if (flag < 0) {
    const char* value = std::getenv("TFM_PROFILE_OPS");
    const absl::string_view text = value == nullptr ? "" : value;
    flag = text == "shapes" ? 7 : text == "sync" ? 3 : (!text.empty() && text != "0") ? 1 : 0;
    EnabledFlag().store(flag, std::memory_order_relaxed);
  }
  return flag;
}

absl::Mutex& ProfileMutex() {
  static absl::Mutex* mutex = new absl::Mutex;
  return *mutex;
}

std::map<std::string, OpTotal, std::less<>>& Totals() {
  static auto* totals = new std::map<std::string, OpTotal, std::less<>>;
  return *totals;
}

thread_local int op_depth = 0;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool OpProfilingEnabled() { return (ReadFlag() & 1) != 0; }

bool OpProfilingSynchronizes() { return (ReadFlag() & 3) == 3; }

bool OpProfilingByShape() { return (ReadFlag() & 5) == 5; }

void SetOpProfiling(bool enabled) { EnabledFlag().store((ReadFlag() & 6) | (enabled ? 1 : 0)); }

void SetOpProfilingSynchronizes(bool synchronize) {
  EnabledFlag().store(synchronize ? (ReadFlag() | 3) : (ReadFlag() & 1));
}

void SetOpProfilingByShape(bool by_shape) {
  EnabledFlag().store(by_shape ? 7 : (ReadFlag() & 3));
}

void RecordOpTime(absl::string_view op, double seconds) {
  absl::MutexLock lock(&ProfileMutex());
  auto it = Totals().find(op);
  if (it == Totals().end()) it = Totals().emplace(std::string(op), OpTotal{}).first;
  ++it->second.calls;
  it->second.seconds += seconds;
}

int64_t OpProfileCalls(absl::string_view op) {
  absl::MutexLock lock(&ProfileMutex());
  int64_t calls = 0;
  // Rows by shape start with the op's name and a space.
  for (auto it = Totals().lower_bound(op); it != Totals().end(); ++it) {
    const absl::string_view row = it->first;
    if (row.substr(0, op.size()) != op) break;
    if (row.size() == op.size() || row[op.size()] == ' ') calls += it->second.calls;
  }
  return calls;
}

void ResetOpProfile() {
  absl::MutexLock lock(&ProfileMutex());
  Totals().clear();
}

std::string OpProfileReport(double wall_seconds) {
  std::vector<std::pair<std::string, OpTotal>> rows;
  {
    absl::MutexLock lock(&ProfileMutex());
    rows.assign(Totals().begin(), Totals().end());
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double sum = 0;
  for (const auto& row : rows) sum += row.second.seconds;
  int width = 34;  // Wider for rows by shape.
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.first.size()));
  std::string report = absl::StrFormat("%-*s %8s %11s %10s %7s\n", width, "op", "calls",
                                       "total ms", "ms/call", "share");
  for (const auto& [op, total] : rows) {
    absl::StrAppendFormat(&report, "%-*s %8d %11.2f %10.4f %6.1f%%\n", width, op, total.calls,
                          1e3 * total.seconds, 1e3 * total.seconds / total.calls,
                          sum > 0 ? 100 * total.seconds / sum : 0.0);
  }
  absl::StrAppendFormat(&report, "%-*s %8s %11.2f\n", width, "all ops", "", 1e3 * sum);
  if (wall_seconds > 0) {
    absl::StrAppendFormat(&report, "ops' share of %.2f ms wall time: %.1f%% (the rest: outside ops)\n",
                          1e3 * wall_seconds, 100 * sum / wall_seconds);
  }
  return report;
}

ScopedOpTimer::ScopedOpTimer(absl::string_view op) : op_(op) {
  if (!OpProfilingEnabled()) return;
  if (op_depth++ == 0) start_ns_ = NowNs();
}

ScopedOpTimer::~ScopedOpTimer() {
  if (!OpProfilingEnabled()) return;
  --op_depth;
  if (start_ns_ >= 0) {
    RecordOpTime(row_.empty() ? op_ : absl::string_view(row_),
                 1e-9 * static_cast<double>(NowNs() - start_ns_));
  }
}

}  // namespace tfm
