// The algorithmic task's settings: its AlgorithmicConfig, read from the task
// config's `extensions` and checked, with errors that name the config file
// and line.
#ifndef TFM_PLUGINS_ALGORITHMIC_ALGORITHMIC_CONFIG_H_
#define TFM_PLUGINS_ALGORITHMIC_ALGORITHMIC_CONFIG_H_

#include "absl/status/statusor.h"
#include "core/config/config_loader.h"
#include "plugins/algorithmic/algorithmic.pb.h"

namespace algorithmic {

// The one AlgorithmicConfig among `loaded`'s extensions, checked: the
// problem is set, base in 2..10, 1 <= min_length <= max_length, sizes
// positive, and a source (with its eos) fits data.batching.max_length.
// InvalidArgument when it is missing, appears twice, or is wrong.
absl::StatusOr<AlgorithmicConfig> ReadAlgorithmicConfig(const tfm::LoadedConfig& loaded);

// Symbols in the longest source line (ADD: two numbers and "+").
int MaxSourceSymbols(const AlgorithmicConfig& config);

}  // namespace algorithmic

#endif  // TFM_PLUGINS_ALGORITHMIC_ALGORITHMIC_CONFIG_H_
