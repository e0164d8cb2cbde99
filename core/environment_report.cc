#include "core/environment_report.h"

#include "absl/base/const_init.h"
#include "absl/synchronization/mutex.h"
#include "core/cpu_features.h"

namespace tfm {
namespace {

ABSL_CONST_INIT absl::Mutex mu(absl::kConstInit);

std::vector<std::pair<std::string, std::function<std::string()>>>& Sources() {
  static auto* sources = new std::vector<std::pair<std::string, std::function<std::string()>>>;
  return *sources;
}

}  // namespace

void AddEnvironmentLine(std::string label, std::function<std::string()> describe) {
  absl::MutexLock lock(&mu);
  Sources().emplace_back(std::move(label), std::move(describe));
}

std::vector<std::pair<std::string, std::string>> EnvironmentReport() {
  std::vector<std::pair<std::string, std::function<std::string()>>> sources;
  {
    absl::MutexLock lock(&mu);
    sources = Sources();
  }
  std::vector<std::pair<std::string, std::string>> report = {{"cpu", CpuSummary()}};
  for (const auto& [label, describe] : sources) report.emplace_back(label, describe());
  return report;
}

}  // namespace tfm
