// The command-line driver shared by //tools:transformer and the task
// binaries (//tasks:translate_ende, ...): loads plugins, lists what is
// registered, loads and validates a task config, and runs the task.
#ifndef TFM_TASKS_DRIVER_DRIVER_H_
#define TFM_TASKS_DRIVER_DRIVER_H_

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/config/config_loader.h"
#include "core/plugin_loader.h"
#include "core/task_registry.h"

namespace tfm {

struct DriverOptions {
  std::vector<std::string> plugins;    // --plugin=PATH, repeatable.
  std::vector<std::string> overrides;  // --set=section.field=value, repeatable.
  // What --device and --dtype set (after the overrides), named as typed.
  std::vector<FlagOverride> flag_overrides;
  std::string config;             // --config=PATH.
  std::string mode = "validate";  // The command, or --mode=.
  bool list = false;              // --list.
  std::string work_dir;           // --workdir=DIR (default: data.work_dir).
  std::string data_dir;           // --data=DIR: corpora from there (empty: the config's).
  double minutes = 0;             // --minutes=N: train's time limit (0: none).
  int average_last = 0;           // --last=N: average's checkpoint count.
  int average_best = 0;           // --best=N: average the N best by validation instead.
  DecodeRequest decode;           // --model, --input, --output, --src, --ref, ...
  // The task's own flags (TaskDef::flags) by name: --name=value.
  std::map<std::string, std::string> task_flags;
  std::string program;  // argv[0]'s base name.
  // The flags given a value other than their default (their names, without
  // "--"): one that the command does not read is an error.
  std::vector<std::string> given_flags;
};

// Takes every --plugin and --set out of argv (absl flags keep only the last
// value of a flag; these two are repeatable) and returns the rest.
std::vector<char*> ExtractRepeatedFlags(int argc, char** argv, DriverOptions* options);

// Takes the task flags (TaskDef::flags) out of `args` into
// options->task_flags and returns the rest: every --name[=value] that is not
// a driver flag, with its value after "=" or, for a flag a built-in task
// declares, as the next argument. RunDriver checks that the task declares
// them.
std::vector<char*> ExtractTaskFlags(const std::vector<char*>& args, DriverOptions* options);

// The config file for --config=`config`: a path (taken relative to the
// user's directory), or a bare preset name looked up beside `default_config`
// and in every task's configs folder.
std::string ResolvePreset(const std::string& config, const std::string& default_config);

// The config of a command given no --config (`config_flag` empty) whose
// --workdir holds checkpoints: for train and average, the config that the
// latest checkpoint saved, so that `train --workdir=W` trains W's run on (as
// the main job's closing hint says) and `average --workdir=W` takes W's
// average_last_checkpoints, not the binary's preset. Empty otherwise (the
// preset applies).
std::string WorkDirConfig(const std::string& mode, const std::string& config_flag,
                          const std::string& work_dir);

// Writes the registered ops (with their kernels), layers, tasks, corpus
// formats and decoder input hooks, and what CUDA this binary has.
void ListRegistered(std::ostream& out);

// Runs the driver; messages go to `out`, errors are returned.
absl::Status RunDriver(const DriverOptions& options, std::ostream& out);

// Loads the plugin at `path` if it was built against this engine's headers
// (core/plugin_loader.h's LoadPlugin with this build's ABI number).
absl::StatusOr<LoadedPlugin> LoadEnginePlugin(const std::string& path);

// main() for driver binaries. `default_config` is used when --config is not
// given (the task binaries embed their preset).
int DriverMain(int argc, char** argv, const std::string& default_config);

}  // namespace tfm

#endif  // TFM_TASKS_DRIVER_DRIVER_H_
