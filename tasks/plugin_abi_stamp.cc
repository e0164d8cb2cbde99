// The ABI number of the headers this plugin was compiled against; see
// core/plugin_abi.h, with the number of tasks/plugin_abi_version.h. Linked into every plugin by tfm_plugin.
#include "core/plugin_abi.h"
#include "tasks/plugin_abi_version.h"

TFM_DEFINE_PLUGIN_ABI_VERSION(TFM_PLUGIN_ABI_VERSION);
