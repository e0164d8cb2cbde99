#include "core/config/config_upgrades.h"

#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tfm {
namespace {

struct Upgrades {
  absl::Mutex mu;
  std::vector<std::pair<std::string, ConfigUpgrade>> list ABSL_GUARDED_BY(mu);
};

Upgrades& AllUpgrades() {
  static auto* upgrades = new Upgrades();
  return *upgrades;
}

}  // namespace

void RegisterConfigUpgrade(std::string name, ConfigUpgrade upgrade) {
  Upgrades& upgrades = AllUpgrades();
  absl::MutexLock lock(&upgrades.mu);
  upgrades.list.emplace_back(std::move(name), std::move(upgrade));
}

void UpgradeTaskConfig(config::TaskConfig* config) {
  Upgrades& upgrades = AllUpgrades();
  absl::MutexLock lock(&upgrades.mu);
  for (const auto& [name, upgrade] : upgrades.list) upgrade(config);
}

}  // namespace tfm
