#include "core/driver/driver.h"

#include <cstring>
#include <iostream>
#include <map>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config/config_loader.h"
#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/layer_registry.h"
#include "core/op_registry.h"
#include "core/paths.h"
#include "core/plugin_loader.h"
#include "core/status_macros.h"
#include "core/task_registry.h"
#include "google/protobuf/text_format.h"

ABSL_FLAG(std::string, config, "", "task config (.pbtxt); task binaries default to their preset");
ABSL_FLAG(std::string, mode, "validate", "validate | train | evaluate | decode");
ABSL_FLAG(bool, list, false, "list registered ops, kernels, layers and tasks, then exit");
// Declared for --help only: ExtractRepeatedFlags consumes them before parsing.
ABSL_FLAG(std::string, plugin, "", "shared library to load (repeatable)");
ABSL_FLAG(std::string, set, "", "override one config field: section.field=value (repeatable)");

namespace tfm {
namespace {

absl::StatusOr<TaskMode> ParseMode(const std::string& mode) {
  static const auto* modes = new std::map<std::string, TaskMode>{
      {"validate", TaskMode::kValidate},
      {"train", TaskMode::kTrain},
      {"evaluate", TaskMode::kEvaluate},
      {"decode", TaskMode::kDecode}};
  auto it = modes->find(mode);
  if (it == modes->end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode=", mode, ": expected validate, train, evaluate or decode"));
  }
  return it->second;
}

}  // namespace

std::vector<char*> ExtractRepeatedFlags(int argc, char** argv, DriverOptions* options) {
  const std::vector<std::pair<std::string, std::vector<std::string>*>> repeated = {
      {"plugin", &options->plugins}, {"set", &options->overrides}};
  // Consumes argv[*i] (and its value, for "--flag value") if it is one of the
  // repeated flags.
  auto take = [&](int* i) {
    const std::string arg = argv[*i];
    for (const auto& [flag, values] : repeated) {
      for (const std::string& spelling : {"--" + flag, "-" + flag}) {
        if (absl::StartsWith(arg, spelling + "=")) {
          values->push_back(arg.substr(spelling.size() + 1));
          return true;
        }
        if (arg == spelling && *i + 1 < argc) {
          values->push_back(argv[++*i]);
          return true;
        }
      }
    }
    return false;
  };
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (i == 0 || !take(&i)) rest.push_back(argv[i]);
  }
  return rest;
}

void ListRegistered(std::ostream& out) {
  // Kernels grouped under their op: "layer_norm  CPU/f32 CUDA/f16 ...".
  std::map<std::string, std::vector<std::string>> kernels;
  for (const std::string& name : KernelRegistry().Names()) {
    const size_t slash = name.find('/');
    kernels[name.substr(0, slash)].push_back(name.substr(slash + 1));
  }
  out << "ops:\n";
  for (const std::string& op : OpRegistry().Names()) {
    out << "  " << op << "  [" << absl::StrJoin(kernels[op], " ") << "]\n";
  }
  out << "layers:\n";
  for (const std::string& layer : LayerRegistry().Names()) out << "  " << layer << "\n";
  out << "tasks:\n";
  for (const std::string& task : TaskRegistry().Names()) out << "  " << task << "\n";
  // The CPU kernels' instruction set, chosen at run time (TFM_CPU_ISA caps it).
  out << "cpu: " << CpuSummary() << "\n";
  out << "cuda: ";
  if (!cuda::BuiltWithCuda()) {
    out << "not built\n";
    return;
  }
  const int devices = cuda::DeviceCount();
  out << devices << " device(s); " << cuda::LibraryVersions() << "\n";
  for (int i = 0; i < devices; ++i) {
    absl::StatusOr<std::string> name = cuda::DeviceName(i);
    out << "  cuda:" << i << " " << (name.ok() ? *name : name.status().ToString()) << "\n";
  }
}

absl::Status RunDriver(const DriverOptions& options, std::ostream& out) {
  TFM_RETURN_IF_ERROR(RegistrationJournal::Get().Check());
  TFM_ASSIGN_OR_RETURN(std::vector<LoadedPlugin> plugins, LoadPlugins(options.plugins));
  for (const LoadedPlugin& plugin : plugins) {
    out << "loaded plugin " << plugin.path << ": " << absl::StrJoin(plugin.registered, ", ")
        << "\n";
  }
  if (options.list) {
    ListRegistered(out);  // Also on a CPU we cannot run: it says why.
    return absl::OkStatus();
  }
  // Before any kernel runs: a CPU without AVX2 gets this message, not SIGILL.
  TFM_RETURN_IF_ERROR(CheckCpuSupported());
  if (options.config.empty()) {
    return absl::InvalidArgumentError("no config: pass --config=FILE.pbtxt (or --list)");
  }
  TFM_ASSIGN_OR_RETURN(TaskMode mode, ParseMode(options.mode));
  TFM_ASSIGN_OR_RETURN(LoadedConfig loaded, LoadTaskConfig(options.config, options.overrides));
  TFM_ASSIGN_OR_RETURN(std::unique_ptr<Task> task, CreateTask(loaded.config.task()));
  TFM_RETURN_IF_ERROR(task->Validate(loaded));
  if (mode == TaskMode::kValidate) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(loaded.config, &text);
    out << "# " << options.config << " is valid (task '" << loaded.config.task() << "')\n"
        << text;
  }
  TaskContext context{std::move(loaded), mode, &out};
  return task->Run(context);
}

int DriverMain(int argc, char** argv, const std::string& default_config) {
  absl::SetProgramUsageMessage(
      "Transformer engine driver.\n"
      "  --list                       list registered ops, layers and tasks\n"
      "  --config=FILE [--set=a.b=v]  validate a task config, or run it with --mode\n"
      "  --plugin=LIB.so              load a plugin first (repeatable)");
  DriverOptions options;
  std::vector<char*> rest = ExtractRepeatedFlags(argc, argv, &options);
  absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  options.config = ResolveUserPath(absl::GetFlag(FLAGS_config));
  if (options.config.empty()) options.config = default_config;
  for (std::string& plugin : options.plugins) plugin = ResolveUserPath(plugin);
  options.mode = absl::GetFlag(FLAGS_mode);
  options.list = absl::GetFlag(FLAGS_list);
  absl::Status status = RunDriver(options, std::cout);
  if (!status.ok()) {
    std::cerr << "error: " << status.message() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tfm
