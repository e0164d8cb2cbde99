// The plugin ABI check: a plugin compiled against other versions of the
// engine's headers (other struct layouts, other virtual functions) would
// corrupt the registries the moment its registrars ran, so the loader
// refuses it first.
//
// TFM_PLUGIN_ABI_VERSION (generated into tasks/plugin_abi_version.h, on the
// floor that sees every public header) is a hash of every header of
// //core:plugin_api and //tasks:task_api, so it changes with them without
// anyone remembering to bump it. Each plugin exports the number it was
// compiled with as the constant `tfm_plugin_abi_version` (tfm_plugin in
// tools/build_defs.bzl links tasks/plugin_abi_stamp.cc into it); the host
// passes its own number to LoadPlugin (core/plugin_loader.h), which reads the
// plugin's from the library's file before dlopen runs any of its code.
#ifndef TFM_CORE_PLUGIN_ABI_H_
#define TFM_CORE_PLUGIN_ABI_H_

#include <cstdint>

// The exported symbol's name, for the loader.
#define TFM_PLUGIN_ABI_SYMBOL_NAME "tfm_plugin_abi_version"

// Defines the exported constant. A data symbol rather than a function: the
// loader reads its bytes from the file without executing anything. Used
// once per plugin, by tasks/plugin_abi_stamp.cc (tests use it to build a
// plugin with a wrong number).
#define TFM_DEFINE_PLUGIN_ABI_VERSION(version) \
  extern "C" __attribute__((visibility("default"), used)) const uint64_t tfm_plugin_abi_version = (version)

#endif  // TFM_CORE_PLUGIN_ABI_H_
