// Config upgrades: when a task's settings move out of the engine's schema
// (task_config.proto) into the task's own extension, the old fields stay,
// deprecated, so that configs and the configs saved in checkpoints before
// the move still parse; the task registers how to move them into its
// extension, and every config read goes through UpgradeTaskConfig. The
// engine itself knows nothing of what an upgrade does.
#ifndef TFM_CORE_CONFIG_CONFIG_UPGRADES_H_
#define TFM_CORE_CONFIG_CONFIG_UPGRADES_H_

#include <functional>
#include <string>
#include <utility>

#include "core/config/task_config.pb.h"

namespace tfm {

// Moves what `config` sets in deprecated fields to where it belongs now and
// clears them. Must leave a config without them unchanged (configs are
// upgraded whenever they are read, and may be upgraded twice).
using ConfigUpgrade = std::function<void(config::TaskConfig* config)>;

// Adds `upgrade` (`name` says whose, for readers of the code). Built-in tasks
// register from static initialisers (TFM_REGISTER_CONFIG_UPGRADE).
void RegisterConfigUpgrade(std::string name, ConfigUpgrade upgrade);

// Every registered upgrade, in the order of registration.
void UpgradeTaskConfig(config::TaskConfig* config);

namespace internal {
struct ConfigUpgradeRegistrar {
  ConfigUpgradeRegistrar(std::string name, ConfigUpgrade upgrade) {
    RegisterConfigUpgrade(std::move(name), std::move(upgrade));
  }
};
}  // namespace internal

#define TFM_CONFIG_UPGRADE_NAME_INNER(line) tfm_config_upgrade_registrar_##line
#define TFM_CONFIG_UPGRADE_NAME(line) TFM_CONFIG_UPGRADE_NAME_INNER(line)
#define TFM_REGISTER_CONFIG_UPGRADE(name, upgrade)                                   \
  static ::tfm::internal::ConfigUpgradeRegistrar TFM_CONFIG_UPGRADE_NAME(__COUNTER__)( \
      name, upgrade)

}  // namespace tfm

#endif  // TFM_CORE_CONFIG_CONFIG_UPGRADES_H_
